"""Writing traces in other tools' formats."""
