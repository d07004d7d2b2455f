"""Model backends: embedders (torch, ONNX), cross-encoders, the LLM client, writer and judge."""
