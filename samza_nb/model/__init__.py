"""samza_nb.model."""
