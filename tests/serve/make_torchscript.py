# Saves a small TorchScript model as a PyTorch user would (torch.jit.save from Debian's
# python3-torch), and what it predicts for a few inputs, for the serve tests:
#   /usr/bin/python3 make_torchscript.py MODEL.pt EXPECTED.json
import json
import sys

import torch


class TipClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(7)
        self.hidden = torch.nn.Linear(4, 8)
        self.out = torch.nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.out(torch.relu(self.hidden(x))), dim=1)


model = torch.jit.script(TipClassifier())
torch.jit.save(model, sys.argv[1])
inputs = torch.tensor([[0.1, 0.2, 0.3, 0.4], [1.0, 0.0, -1.0, 2.0], [5.0, -3.0, 0.5, 0.25]])
with torch.no_grad():
    outputs = model(inputs)
with open(sys.argv[2], "w") as out:
    json.dump({"inputs": inputs.tolist(), "outputs": outputs.tolist()}, out)
