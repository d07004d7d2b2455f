"""The answer path (DESIGN.md, "The flow"): understand, access, retrieve, rerank, synthesise, critic, compose."""
