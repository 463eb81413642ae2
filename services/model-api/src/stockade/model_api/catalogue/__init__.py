"""The model catalogue: what the JSON API and the bus commands serve, and the units of work both the API and
the console call to change it (``actions``). Nothing here imports the console."""
