"""Pure text analysis: values, names and codes, claims."""
