"""What a team reads the gate log with: report, audit, gaps, conflicts, feedback, evaluation."""
