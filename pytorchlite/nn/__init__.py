"""pytorchlite.nn: neural-network building blocks (torch.nn)."""
