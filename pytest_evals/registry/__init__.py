"""Finding things by name: task families, ``module:attr`` strings, missing extras.

:mod:`.family_registry` reads the ``pytest_evals.families`` entry points (the built-in
families register like third-party ones); :mod:`.dotted_names` resolves
``"package.module:attr"`` with one kind of error; :mod:`.missing_extras` says which extra
brings a library that is not installed.
"""
