"""specc plan and specc simulate: deployments that serve a traffic within its latency targets."""
