"""samza_nb.services."""
