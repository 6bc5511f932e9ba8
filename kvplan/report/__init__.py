"""Renderers: a result (the plain data of ``kvplan.results``) → JSON / YAML / terminal tables."""
