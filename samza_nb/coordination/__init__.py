"""samza_nb.coordination."""
