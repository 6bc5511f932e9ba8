"""Engine models: how each inference engine turns per-layer specs into a cache layout."""
