"""samza_nb.api."""
