"""How a model is deployed: sharding over tp/pp/dp/ep, collectives, quantization schemes."""
