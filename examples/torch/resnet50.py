"""torchvision's ResNet-50 trained with bf16 autocast, channels_last and SGD with momentum, with
PyTorch's kernels (cuDNN in benchmark mode) and through tiletune.torch. The data is a fixed set of
synthetic images with labels (nothing is downloaded): the loss falls as the model memorizes them.

    python examples/torch/resnet50.py --batch 128                  # both sides on the GPU
    python examples/torch/resnet50.py --sides tiletune --record r50.json --steps 2
    tiletune tune r50.json --db r50.db && tiletune db pack r50.db r50-ship.db
    python examples/torch/resnet50.py --db r50-ship.db

Small on the CPU: --device cpu --model resnet18 --batch 2 --image 64
"""
import os
import sys

import torch
import torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train  # noqa: E402


def main():
    p = train.arguments(__doc__, {"batch": 128})
    p.add_argument("--model", default="resnet50", help="a torchvision model name")
    p.add_argument("--image", type=int, default=224)
    p.add_argument("--classes", type=int, default=1000)
    args = p.parse_args()
    torch.backends.cudnn.benchmark = True
    g = torch.Generator().manual_seed(1)
    n_batches = 4
    images = torch.randn(n_batches, args.batch, 3, args.image, args.image, generator=g)
    labels = torch.randint(0, args.classes, (n_batches, args.batch), generator=g)
    images, labels = images.to(args.device), labels.to(args.device)

    def batches(i):
        return images[i % n_batches].contiguous(memory_format=torch.channels_last), labels[i % n_batches]

    make_model = lambda: getattr(torchvision.models, args.model)(num_classes=args.classes)
    make_opt = lambda m: torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5)
    results = train.run_sides(args, make_model, make_opt, batches, F.cross_entropy, memory_format=torch.channels_last)
    train.report(args, results)


if __name__ == "__main__":
    main()
