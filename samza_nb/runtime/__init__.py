"""samza_nb.runtime."""
