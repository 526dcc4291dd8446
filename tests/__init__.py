"""The test suite; its folders mirror the package (`sb3_acer/`), `helpers/` holds what tests share."""
