"""The gates, one module each, named by `rag.model.answers.GateName`, in the order an attempt meets
them (rag/pipeline/flow.py): retrieval_score, premise, writer, bridge, rescue, relevance, writer_conflicts,
self_consistency, faithfulness, completeness; then contradiction, when the answer is composed.
Each builds one `GateOutcome` from what its step found; thresholds come from the settings
(rag/config/, defaults from rag/calibration.json) through `PipelineConfig`."""
