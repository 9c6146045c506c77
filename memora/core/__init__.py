"""Settings, errors, memory records, files, the clock and text: what every other part stands on."""
