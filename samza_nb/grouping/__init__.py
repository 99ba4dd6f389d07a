"""samza_nb.grouping."""
