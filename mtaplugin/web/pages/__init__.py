"""The page resources, one module per audience."""
