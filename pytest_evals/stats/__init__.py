"""Statistics with no knowledge of evaluations: intervals, tests and quantiles.

The lowest layer. :mod:`.intervals` holds the interval estimators and exact tests every
aggregate and gate uses (Clopper-Pearson, t and bounded means, F-beta, gamma draws for
posteriors, McNemar); :mod:`.paired_proportions` the interval of a paired difference of
proportions (Tango's); :mod:`.beta_quantile` the Beta quantile behind the proportion and
F1 intervals, without scipy.
"""
