"""Statistics with no knowledge of evaluations: intervals, tests and quantiles.

The lowest layer. :mod:`.intervals` holds the interval estimators and exact tests every
aggregate and gate uses (Wilson, t and bounded means, Dirichlet and bootstrap draws,
McNemar); :mod:`.beta_quantile` the Beta quantile behind the F1 interval, without scipy.
"""
