"""The local chat page: try Candor in a browser with no Slack or Teams (`candor serve`, then open `/`)."""
