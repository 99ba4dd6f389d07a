"""samza_nb.systems."""
