"""`bin/grid`: registered experiments of systems x seeds, their runs and reports."""
