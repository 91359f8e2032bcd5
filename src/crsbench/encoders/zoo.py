"""The encoder zoo: one frozen, declarative `ZooEntry` per family, registered by name.

An entry records what the protocol asks of every encoder (source library, identifier, pinned
revision, licence, input resolution, normalisation, which output is the embedding, specialty) and
how the adapter builds it. Nothing here imports a model library: adapters import theirs when an
encoder is built. Values marked `status="unconfirmed: ..."` could not be checked against a public
model card when the entry was written; `revision="unconfirmed"` means the hub's default branch is
used until someone pins a commit (suite option `revision: <sha>`).

Preprocessing. The extraction engine resizes every image to a square `meta.input_size` with the
card's filter (`interpolation`: bilinear or bicubic, antialiased). Where a card says "resize the
shorter side to R, centre-crop C", the entry sets `resize_to=R` and `input_size=C`: the engine
resizes to R x R and the adapter crops C x C, which is exactly the card's pipeline for square images.
One honest difference remains: a non-square image is squashed to a square instead of keeping its
aspect ratio (`card` records the card's wording for each entry).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import partial
import importlib

from crsbench.encoders.base import EncoderMeta
from crsbench.encoders.registry import register_encoder
from crsbench.errors import EncoderError

IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
OPENAI_MEAN, OPENAI_STD = (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)
HALF = (0.5, 0.5, 0.5)
HAI_DEF = "Health AI Developer Foundations terms of use"

# source -> adapter module; imported only when an encoder of that source is built
ADAPTERS = {
    "timm": "crsbench.encoders.adapters.timm_adapter",
    "open_clip": "crsbench.encoders.adapters.open_clip_adapter",
    "transformers": "crsbench.encoders.adapters.transformers_adapter",
    "local": "crsbench.encoders.adapters.local_adapter",
}

# options a suite may pass to a zoo encoder (`encoders: [{name: ..., options: {...}}]`)
RUNTIME_OPTIONS = ("device", "precision")
WEIGHT_OPTIONS = ("weights", "revision")


@dataclass(frozen=True)
class ZooEntry:
    name: str
    family: str
    group: str  # general | broad-medical | specialty
    source: str  # timm | open_clip | transformers | local
    identifier: str  # what a person searches for: hub repo or the checkpoint's public name
    revision: str
    licence: str
    input_size: int  # pixels the model sees (after any centre crop)
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    embedding: str  # cls | pooled | projected | pre-projection ...: which output is the vector
    embed_dim: int
    specialty: str = "none"
    resize_to: int | None = None  # engine's square size before the adapter's centre crop
    interpolation: str = "bilinear"  # the engine's resize filter, as the card says (always antialiased)
    hub_repo: str | None = None  # where the weight files download from (None: local `weights:` only)
    how_to_get: str = ""  # for weights off the hub
    card: str = ""  # the card's preprocessing, in its words
    status: str = "confirmed"  # or "unconfirmed: <what>"
    notes: str = ""
    options: dict = field(default_factory=dict)  # adapter options: arch, kind, model, files, ...

    def meta(self, revision: str | None = None) -> EncoderMeta:
        crop = {"crop": self.input_size} if self.resize_to else {}
        return EncoderMeta(
            name=self.name,
            family=self.family,
            source=self.source,
            identifier=self.identifier,
            revision=revision or self.revision,
            licence=self.licence,
            input_size=self.resize_to or self.input_size,
            mean=self.mean,
            std=self.std,
            embedding=self.embedding,
            group=self.group,
            specialty=self.specialty,
            embed_dim=self.embed_dim,
            resize=f"{self.interpolation}-antialias",
            notes=" ".join(part for part in (self.card and f"Card: {self.card}.", self.notes) if part),
            extra=crop,
        )

    @property
    def confirmed(self) -> bool:
        return self.status == "confirmed"


ZOO: dict[str, ZooEntry] = {}


def build_entry(entry: ZooEntry, **options):
    """ZooEntry + suite options -> an Encoder whose model loads on first `encode`."""
    from crsbench.encoders.adapters.weights import WeightsSource

    unknown = sorted(set(options) - set(RUNTIME_OPTIONS) - set(WEIGHT_OPTIONS))
    if unknown:
        raise EncoderError(
            f"encoder {entry.name!r}: unknown options {unknown}; allowed: {list(WEIGHT_OPTIONS + RUNTIME_OPTIONS)}"
        )
    revision = options.get("revision")
    weights = WeightsSource.of(
        entry.name, entry.hub_repo, revision or entry.revision, options.get("weights"), entry.how_to_get
    )
    meta = entry.meta(revision)
    if options.get("weights"):
        # a local file is not the hub's revision: say so in the cache key and the records
        meta = replace(meta, revision=f"local:{weights.local_path.name}")
    runtime = {k: options[k] for k in RUNTIME_OPTIONS if k in options}
    adapter = importlib.import_module(ADAPTERS[entry.source])
    return adapter.build(entry, meta, weights, **runtime)


def register_zoo_entry(entry: ZooEntry, *, replace: bool = False) -> None:
    """Declare an encoder: the entry goes into the zoo and into the registry under its name."""
    if entry.source not in ADAPTERS:
        raise EncoderError(f"zoo entry {entry.name!r}: source must be one of {sorted(ADAPTERS)}, got {entry.source!r}")
    register_encoder(entry.name, partial(build_entry, entry), replace=replace)
    ZOO[entry.name] = entry


def describe(name: str) -> EncoderMeta:
    """An encoder's metadata without loading weights (zoo entries never touch a library here)."""
    if name in ZOO:
        return ZOO[name].meta()
    from crsbench.encoders.registry import get_encoder

    return get_encoder(name).meta  # built-in and user factories are expected to load lazily


def _timm(name, family, group, arch, licence, input_size, resize_to, mean, std, embedding, embed_dim, interp, **kw):
    crop_pct = input_size / resize_to
    return ZooEntry(
        name=name, family=family, group=group, source="timm", identifier=f"timm/{arch}", revision="unconfirmed",
        licence=licence, input_size=input_size, resize_to=resize_to, mean=mean, std=std, embedding=embedding,
        embed_dim=embed_dim, hub_repo=f"timm/{arch}", interpolation=interp,
        card=f"timm pretrained_cfg: resize shorter side {resize_to} {interp} (crop_pct {crop_pct:.3f}), "
        f"centre-crop {input_size}, mean {list(mean)}, std {list(std)}",
        options={"arch": arch}, **kw,
    )


ENTRIES = (
    # --- general-purpose --------------------------------------------------------------------------
    _timm("resnet50-in1k", "ImageNet ResNet-50", "general", "resnet50.tv_in1k", "bsd-3-clause", 224, 256,
          IMAGENET_MEAN, IMAGENET_STD, "pooled (global average pool, pre-logits)", 2048, "bilinear",
          notes="The reference encoder: torchvision's original ImageNet-1k ResNet-50 weights, via timm."),
    _timm("vit-b16-in21k", "ViT-B/16", "general", "vit_base_patch16_224.augreg2_in21k_ft_in1k", "apache-2.0", 224,
          248, HALF, HALF, "cls (class token after the final norm)", 768, "bicubic"),
    _timm("convnext-base-in22k", "ConvNeXt", "general", "convnext_base.fb_in22k_ft_in1k", "apache-2.0", 224, 256,
          IMAGENET_MEAN, IMAGENET_STD, "pooled (global average pool + head LayerNorm, pre-logits)", 1024, "bicubic"),
    ZooEntry(
        name="dinov2-base", family="DINOv2", group="general", source="transformers",
        identifier="facebook/dinov2-base", hub_repo="facebook/dinov2-base", revision="unconfirmed",
        licence="apache-2.0", input_size=224, resize_to=256, mean=IMAGENET_MEAN, std=IMAGENET_STD,
        embedding="cls (pooler_output: class token after the final LayerNorm)", embed_dim=768,
        card="BitImageProcessor: resize shortest edge 256 bicubic, centre-crop 224, ImageNet mean/std",
        interpolation="bicubic",
        options={"kind": "dinov2"},
    ),
    ZooEntry(
        name="clip-vit-b16", family="CLIP", group="general", source="open_clip",
        identifier="open_clip ViT-B-16 / openai", hub_repo="timm/vit_base_patch16_clip_224.openai",
        revision="unconfirmed", licence="mit", input_size=224, mean=OPENAI_MEAN, std=OPENAI_STD,
        embedding="projected (encode_image, before L2 normalisation)", embed_dim=512,
        card="open_clip preprocess: resize shorter side 224 bicubic, centre-crop 224, OpenAI mean/std",
        interpolation="bicubic",
        options={"model": "ViT-B-16", "config_overrides": {"quick_gelu": True}},
    ),
    ZooEntry(
        name="siglip-base", family="SigLIP", group="general", source="transformers",
        identifier="google/siglip-base-patch16-224", hub_repo="google/siglip-base-patch16-224",
        revision="unconfirmed", licence="apache-2.0", input_size=224, mean=HALF, std=HALF,
        embedding="pooled (MAP attention-pool head = SigLIP's image embedding; no separate projection)",
        embed_dim=768, card="SiglipImageProcessor: resize 224x224 bicubic, mean/std 0.5",
        interpolation="bicubic",
        options={"kind": "siglip"},
    ),
    # --- broad-medical ----------------------------------------------------------------------------
    ZooEntry(
        name="biomedclip", family="BiomedCLIP", group="broad-medical", source="open_clip",
        identifier="microsoft/BiomedCLIP-PubMedBERT_256-vit_base_patch16_224",
        hub_repo="microsoft/BiomedCLIP-PubMedBERT_256-vit_base_patch16_224", revision="unconfirmed",
        licence="mit", input_size=224, mean=OPENAI_MEAN, std=OPENAI_STD,
        embedding="projected (vision tower + projection head, before L2 normalisation)", embed_dim=512,
        card="open_clip_config.json preprocess_cfg: resize shorter side 224 bicubic, centre-crop 224, OpenAI mean/std",
        interpolation="bicubic",
        status="unconfirmed: preprocess_cfg values not re-read from the repository's open_clip_config.json",
        notes="Only the ViT-B/16 vision tower is built: the PubMedBERT text tower is never downloaded.",
    ),
    ZooEntry(
        name="medsiglip-448", family="MedSigLIP", group="broad-medical", source="transformers",
        identifier="google/medsiglip-448", hub_repo="google/medsiglip-448", revision="unconfirmed",
        licence=HAI_DEF, input_size=448, mean=HALF, std=HALF,
        embedding="pooled (MAP head of the SigLIP-400M vision tower = image embedding)", embed_dim=1152,
        card="model card: 448x448 input; SiglipImageProcessor mean/std 0.5",
        status="unconfirmed: resize interpolation of its preprocessor_config.json",
        notes="Gated: accept the HAI-DEF terms on the hub before download.", options={"kind": "siglip"},
    ),
    ZooEntry(
        name="medgemma-4b-vision", family="MedGemma image encoder", group="broad-medical", source="transformers",
        identifier="google/medgemma-4b-it", hub_repo="google/medgemma-4b-it", revision="unconfirmed",
        licence=HAI_DEF, input_size=896, mean=HALF, std=HALF,
        embedding="pre-projection (mean of the SigLIP vision tower's last hidden states, before the "
        "multimodal projector)", embed_dim=1152,
        card="Gemma3ImageProcessor: resize 896x896 bilinear, mean/std 0.5",
        status="unconfirmed: preprocessing and shard layout taken from the Gemma 3 processor defaults",
        notes="Only the safetensors shards holding vision_tower.* are read; the 4B language model is never loaded. "
        "Gated (HAI-DEF terms).", options={"kind": "gemma3-vision"},
    ),
    ZooEntry(
        name="pubmedclip-vit-b32", family="PubMedCLIP", group="broad-medical", source="transformers",
        identifier="flaviagiammarino/pubmed-clip-vit-base-patch32",
        hub_repo="flaviagiammarino/pubmed-clip-vit-base-patch32", revision="unconfirmed", licence="mit",
        input_size=224, mean=OPENAI_MEAN, std=OPENAI_STD,
        embedding="projected (CLIPVisionModelWithProjection.image_embeds)", embed_dim=512,
        card="CLIPImageProcessor: resize shortest edge 224 bicubic, centre-crop 224, OpenAI mean/std",
        interpolation="bicubic",
        status="unconfirmed: processor values assumed equal to openai/clip-vit-base-patch32's",
        options={"kind": "clip"},
    ),
    ZooEntry(
        name="radimagenet-resnet50", family="RadImageNet ResNet-50", group="broad-medical", source="local",
        identifier="BMEII-AI/RadImageNet ResNet50 (PyTorch port)", revision="unconfirmed",
        licence="unconfirmed (RadImageNet terms)", input_size=224, mean=IMAGENET_MEAN, std=IMAGENET_STD,
        embedding="pooled (global average pool)", embed_dim=2048,
        how_to_get="download the RadImageNet ResNet-50 weights (github.com/BMEII-AI/RadImageNet) and convert them "
        "to a torchvision-layout ResNet-50 state dict",
        card="RadImageNet: 224x224 input",
        status="unconfirmed: normalisation and the PyTorch checkpoint's key layout",
        notes="No hub release: needs `weights: /path`. Loaded strictly into timm's resnet50.",
        options={"arch_library": "timm", "arch": "resnet50", "files": ("ResNet50.safetensors", "ResNet50.pt")},
    ),
    # --- specialty --------------------------------------------------------------------------------
    ZooEntry(
        name="panderm-large", family="PanDerm", group="specialty", specialty="dermatology", source="local",
        identifier="SiyuanYan1/PanDerm (PanDerm-Large, ViT-L/16)", revision="unconfirmed",
        licence="unconfirmed (see github.com/SiyuanYan1/PanDerm)", input_size=224, mean=IMAGENET_MEAN,
        std=IMAGENET_STD, embedding="cls (class token after the final norm)", embed_dim=1024,
        how_to_get="download the PanDerm weights from the Google Drive link in github.com/SiyuanYan1/PanDerm",
        card="PanDerm linear-probe code: 224x224",
        status="unconfirmed: normalisation, and whether the CAE checkpoint maps onto timm's ViT-L/16 keys",
        notes="A mismatch stops with the differing keys; then register PanDerm as a callable using the authors' code.",
        options={"arch_library": "timm", "arch": "vit_large_patch16_224",
                 "files": ("panderm_ll_data6_checkpoint-499.pth",)},  # file name unconfirmed: pass the file itself
    ),
    ZooEntry(
        name="retfound-cfp", family="RETFound", group="specialty", specialty="ophthalmology (colour fundus)",
        source="local", identifier="YukunZhou/RETFound_mae_natureCFP", hub_repo="YukunZhou/RETFound_mae_natureCFP",
        revision="unconfirmed", licence="cc-by-nc-4.0", input_size=224, resize_to=256, mean=IMAGENET_MEAN,
        std=IMAGENET_STD, embedding="cls (class token after the final norm)", embed_dim=1024,
        card="RETFound eval transform: resize 256 bicubic, centre-crop 224, ImageNet mean/std",
        interpolation="bicubic",
        status="unconfirmed: file name and eval transform recalled from the RETFound repository, not re-read",
        notes="MAE encoder weights in timm's ViT-L/16; the MAE decoder is dropped. Gated on the hub.",
        options={"arch_library": "timm", "arch": "vit_large_patch16_224", "files": ("RETFound_mae_natureCFP.pth",),
                 "ignore_prefixes": ("decoder", "mask_token")},
    ),
    ZooEntry(
        name="rad-dino", family="RAD-DINO", group="specialty", specialty="chest X-ray", source="transformers",
        identifier="microsoft/rad-dino", hub_repo="microsoft/rad-dino", revision="unconfirmed", licence="mit",
        input_size=518, mean=(0.5307, 0.5307, 0.5307), std=(0.2583, 0.2583, 0.2583),
        embedding="cls (pooler_output: class token after the final LayerNorm)", embed_dim=768,
        card="BitImageProcessor: resize shortest edge 518 bicubic, centre-crop 518, mean 0.5307, std 0.2583",
        interpolation="bicubic",
        notes="Licence changed from MSRLA to MIT on the hub (#9); pin a revision to fix the terms you use.",
        options={"kind": "dinov2"},
    ),
    ZooEntry(
        name="chexzero", family="CheXzero", group="specialty", specialty="chest X-ray", source="local",
        identifier="rajpurkarlab/CheXzero (best_64_5e-05_original_22000_0.864.pt)", revision="unconfirmed",
        licence="mit", input_size=224, mean=(101.48761 / 255,) * 3, std=(83.43944 / 255,) * 3,
        embedding="projected (CLIP encode_image, before L2 normalisation)", embed_dim=512,
        how_to_get="download the CheXzero checkpoints from the Google Drive link in github.com/rajpurkarlab/CheXzero",
        card="CheXzero: Normalize(101.48761, 83.43944) on 0-255 pixels, resize 224 bicubic",
        interpolation="bicubic",
        status="unconfirmed: which of the released checkpoints is canonical",
        notes="OpenAI ViT-B/32 CLIP state dict, loaded into open_clip's ViT-B-32 vision tower (QuickGELU).",
        options={"arch_library": "open_clip", "model": "ViT-B-32", "config_overrides": {"quick_gelu": True},
                 "files": ("best_64_5e-05_original_22000_0.864.pt",)},
    ),
)

for _entry in ENTRIES:
    register_zoo_entry(_entry)
