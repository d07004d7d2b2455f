"""The answer path (docs/design.md, "The flow"): understand, access, retrieve, rerank, synthesise, critic, compose."""
