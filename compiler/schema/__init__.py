"""The spec as data: the YAML schema, expressions and their exact meaning (with the closed
forms of access-pattern sums), symbols, layer sets."""
