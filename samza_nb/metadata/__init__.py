"""samza_nb.metadata."""
