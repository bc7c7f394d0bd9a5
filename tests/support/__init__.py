"""Helpers shared by the unit and integration tests (imported as `tests.support.<module>`); no tests here."""
