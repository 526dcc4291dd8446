"""The test suite. Its folders mirror the package: the tests of ``sb3_acer/common/update/`` are in
``tests/common/update/``, those of the ``ACER`` class in ``tests/acer/``, and so on; ``tests/docs/`` checks
the documentation, ``tests/sb3_generic/`` runs SB3's own tests against ACER, and ``tests/data/`` holds the
committed model and replay files. What several test modules use is in ``tests/helpers/`` (imported as
``tests.helpers.<module>``); the shared fixtures are in ``conftest.py``. Every folder is a package, so two
folders may hold test files of the same name."""
