"""samza_nb.plan."""
