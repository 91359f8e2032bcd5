"""The encoder catalogue: one frozen, declarative `EncoderSpec` per published family.

An entry records what the protocol asks of every encoder (source library, identifier, revision,
licence, preprocessing, which output is the embedding, specialty) and how its adapter builds it.
Nothing here imports a model library: the registry imports an adapter when an encoder is built.
Values marked `status="unconfirmed: ..."` could not be checked against a public model card when the
entry was written. `revision` pins the hub commit the entry's card was read at (ResNet-50, ViT-B/16,
DINOv2, SigLIP, BiomedCLIP and RAD-DINO: the commits listed on the hub in 2026-12; a suite's
`revision: <sha>` overrides it); `revision=None` means not pinned: the hub's default branch is used.

Preprocessing. The extraction engine makes each encoder's input from the decoded original in one float
resize by the entry's `pixel_rule` (see `crsbench.encoders.pixels`): `shorter-side` R then centre-crop C where the
card says "resize the shorter side to R, centre-crop C" (timm, open_clip, DINOv2, CLIP processors);
`squash` where the processor resizes the whole image to a square (SigLIP, MedSigLIP, Gemma 3); `pad`
where the authors keep the aspect ratio and pad (CheXzero). `interpolation` and `antialias` are the
card's filter; `card` records the card's own wording for each entry.
"""

from __future__ import annotations

from crsbench.encoders.spec import EncoderSpec

IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
OPENAI_MEAN, OPENAI_STD = (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)
HALF = (0.5, 0.5, 0.5)
HAI_DEF = "Health AI Developer Foundations terms of use"


def _timm(name, family, group, arch, licence, crop, resize, mean, std, output, output_detail, embed_dim, interp, **kw):
    crop_pct = crop / resize
    return EncoderSpec(
        name=name, family=family, group=group, source="timm", identifier=f"timm/{arch}", licence=licence,
        resize=resize, crop=crop, interpolation=interp, mean=mean, std=std, output=output,
        output_detail=output_detail, embed_dim=embed_dim, hub_repo=f"timm/{arch}",
        card=f"timm pretrained_cfg: resize shorter side {resize} {interp} (crop_pct {crop_pct:.3f}), "
        f"centre-crop {crop}, mean {list(mean)}, std {list(std)}",
        adapter={"arch": arch}, **kw,
    )


SPECS = (
    # --- general-purpose --------------------------------------------------------------------------
    _timm("resnet50-in1k", "ImageNet ResNet-50", "general", "resnet50.tv_in1k", "bsd-3-clause", 224, 256,
          IMAGENET_MEAN, IMAGENET_STD, "pooled", "global average pool, pre-logits", 2048, "bilinear",
          revision="aa6c2d36d56bc0209040c02b5a7b7d7bf11d57b8",
          notes="The reference encoder: torchvision's original ImageNet-1k ResNet-50 weights, via timm."),
    _timm("vit-b16-in21k", "ViT-B/16", "general", "vit_base_patch16_224.augreg2_in21k_ft_in1k", "apache-2.0", 224,
          248, HALF, HALF, "cls", "class token after the final norm", 768, "bicubic",
          revision="3feba41e737e1b28af8e1fd7dca8eed073385972"),
    _timm("convnext-base-in22k", "ConvNeXt", "general", "convnext_base.fb_in22k_ft_in1k", "apache-2.0", 224, 256,
          IMAGENET_MEAN, IMAGENET_STD, "pooled", "global average pool + head LayerNorm, pre-logits", 1024, "bicubic"),
    EncoderSpec(
        name="dinov2-base", family="DINOv2", group="general", source="transformers",
        identifier="facebook/dinov2-base", hub_repo="facebook/dinov2-base",
        revision="369b1309d0ea32e09fdc25ee029917e2e5a2db8f",
        licence="apache-2.0", resize=256, crop=224, mean=IMAGENET_MEAN, std=IMAGENET_STD,
        output="cls", output_detail="pooler_output: class token after the final LayerNorm", embed_dim=768,
        card="BitImageProcessor: resize shortest edge 256 bicubic, centre-crop 224, ImageNet mean/std",
        interpolation="bicubic",
        adapter={"kind": "dinov2"},
    ),
    EncoderSpec(
        name="clip-vit-b16", family="CLIP", group="general", source="open_clip",
        identifier="open_clip ViT-B-16 / openai", hub_repo="timm/vit_base_patch16_clip_224.openai",
        licence="mit (OpenAI's release; timm's copy of the weights is card-licensed apache-2.0)", resize=224,
        mean=OPENAI_MEAN, std=OPENAI_STD,
        output="projected", output_detail="encode_image, before L2 normalisation", embed_dim=512,
        card="open_clip preprocess: resize shorter side 224 bicubic, centre-crop 224, OpenAI mean/std",
        interpolation="bicubic",
        adapter={"model": "ViT-B-16", "config_overrides": {"quick_gelu": True}},
    ),
    EncoderSpec(
        name="siglip-base", family="SigLIP", group="general", source="transformers",
        identifier="google/siglip-base-patch16-224", hub_repo="google/siglip-base-patch16-224",
        revision="d9049814fd748f55717e7f6e8e330574f955bd0a",
        licence="apache-2.0", resize=224, mean=HALF, std=HALF,
        output="pooled", output_detail="MAP attention-pool head = SigLIP's image embedding; no separate projection",
        embed_dim=768, card="SiglipImageProcessor: resize the whole image to 224x224 bicubic, mean/std 0.5",
        interpolation="bicubic", pixel_rule="squash",
        adapter={"kind": "siglip"},
    ),
    # --- broad-medical ----------------------------------------------------------------------------
    EncoderSpec(
        name="biomedclip", family="BiomedCLIP", group="broad-medical", source="open_clip",
        identifier="microsoft/BiomedCLIP-PubMedBERT_256-vit_base_patch16_224",
        hub_repo="microsoft/BiomedCLIP-PubMedBERT_256-vit_base_patch16_224",
        revision="9f341de24bfb00180f1b847274256e9b65a3a32e",
        licence="mit", resize=224, mean=OPENAI_MEAN, std=OPENAI_STD,
        output="projected", output_detail="vision tower + projection head, before L2 normalisation", embed_dim=512,
        card="open_clip_config.json preprocess_cfg: resize shorter side 224 bicubic, centre-crop 224, OpenAI mean/std",
        interpolation="bicubic",
        status="unconfirmed: preprocess_cfg values not re-read from the repository's open_clip_config.json",
        notes="Only the ViT-B/16 vision tower is built: the PubMedBERT text tower is never downloaded.",
        adapter={},
    ),
    EncoderSpec(
        name="medsiglip-448", family="MedSigLIP", group="broad-medical", source="transformers",
        identifier="google/medsiglip-448", hub_repo="google/medsiglip-448",
        licence=HAI_DEF, resize=448, mean=HALF, std=HALF,
        output="pooled", output_detail="MAP head of the SigLIP-400M vision tower = image embedding", embed_dim=1152,
        card="model card: 448x448 input, mean/std 0.5; the authors' evaluation notebook resizes the whole image "
        "bilinear without antialiasing (TensorFlow's default resize) to reproduce their numbers",
        interpolation="bilinear", antialias=False, pixel_rule="squash",
        status="unconfirmed: resize interpolation of its preprocessor_config.json",
        notes="The authors' evaluation resize is used, since their published results come from it; the hub "
        "processor instead resizes with an antialiased cubic filter (register a copy with interpolation='bicubic', "
        "antialias=True for that). Gated: accept the HAI-DEF terms on the hub before download.", adapter={"kind": "siglip"},
    ),
    EncoderSpec(
        name="medgemma-4b-vision", family="MedGemma image encoder", group="broad-medical", source="transformers",
        identifier="google/medgemma-4b-it", hub_repo="google/medgemma-4b-it",
        licence=HAI_DEF, resize=896, mean=HALF, std=HALF,
        output="pre-projection", output_detail="mean of the SigLIP vision tower's last hidden states, before the "
        "multimodal projector", embed_dim=1152,
        card="Gemma3ImageProcessor: resize the whole image to 896x896 bilinear, mean/std 0.5",
        pixel_rule="squash",
        status="unconfirmed: preprocessing and shard layout taken from the Gemma 3 processor defaults",
        notes="Only the safetensors shards holding vision_tower.* are read; the 4B language model is never loaded. "
        "Gated (HAI-DEF terms).", adapter={"kind": "gemma3-vision"},
    ),
    EncoderSpec(
        name="pubmedclip-vit-b32", family="PubMedCLIP", group="broad-medical", source="transformers",
        identifier="flaviagiammarino/pubmed-clip-vit-base-patch32",
        hub_repo="flaviagiammarino/pubmed-clip-vit-base-patch32", licence="mit",
        resize=224, mean=OPENAI_MEAN, std=OPENAI_STD,
        output="projected", output_detail="CLIPVisionModelWithProjection.image_embeds", embed_dim=512,
        card="CLIPImageProcessor: resize shortest edge 224 bicubic, centre-crop 224, OpenAI mean/std "
        "(huggingface.co/flaviagiammarino/pubmed-clip-vit-base-patch32)",
        interpolation="bicubic",
        status="unconfirmed: processor values assumed equal to openai/clip-vit-base-patch32's; the repository's "
        "preprocessor_config.json was not re-read",
        notes="The hub's main branch holds only pytorch_model.bin (a model.safetensors exists only on an unmerged "
        "conversion branch): it is read with torch.load(weights_only=True), safetensors preferred where present. "
        "The authors' training code (github.com/sarahESL/PubMedCLIP, PubMedCLIP/lib/data_transform/"
        "transform_wrapper.py and configs/medclip_roco_all.yaml) normalised with ImageNet mean/std on 250-pixel "
        "crops, not the CLIP processor's values; the hub processor is kept until its config is re-read.",
        adapter={"kind": "clip"},
    ),
    EncoderSpec(
        name="radimagenet-resnet50", family="RadImageNet ResNet-50", group="broad-medical", source="local",
        identifier="BMEII-AI/RadImageNet ResNet-50 (PyTorch release, resnet50_torch.pt)",
        licence="mit (github.com/BMEII-AI/RadImageNet LICENSE; no separate terms stated for the weights)",
        resize=224, pixel_rule="squash", interpolation="bilinear", antialias=False, channel_order="BGR",
        mean=HALF, std=HALF,
        output="pooled", output_detail="global average pool after layer4 (the authors' Backbone output), 2048",
        embed_dim=2048,
        how_to_get="download the PyTorch RadImageNet models from the Google Drive folder linked in "
        "github.com/BMEII-AI/RadImageNet (README) and pass resnet50_torch.pt",
        card="github.com/BMEII-AI/RadImageNet acl/acl_pytorch_train.ipynb: cv2.imread (BGR), "
        "(image - 127.5) * 2 / 255, cv2.resize(image, (224, 224)) = whole image, bilinear without antialiasing; "
        "Backbone = nn.Sequential(*list(resnet50().children())[:9]), features flattened to 2048",
        status="unconfirmed: the file name resnet50_torch.pt and its backbone.N keys are taken from the authors' "
        "example notebook and third-party use, not read from the released file",
        notes="No hub release: needs `weights: /path`. The backbone.N keys (0 conv1, 1 bn1, 4-7 layer1-4) are "
        "renamed onto timm's resnet50 (layout radimagenet) and loaded strictly.",
        adapter={"arch_library": "timm", "arch": "resnet50", "layout": "radimagenet",
                 "files": ("resnet50_torch.pt",)},
    ),
    # --- specialty --------------------------------------------------------------------------------
    EncoderSpec(
        name="panderm-large", family="PanDerm", group="specialty", specialty="dermatology", source="local",
        identifier="SiyuanYan1/PanDerm (PanDerm-Large, ViT-L/16, panderm_ll_data6_checkpoint-499.pth)",
        licence="cc-by-nc-nd-4.0", resize=256, crop=224, interpolation="bilinear", mean=IMAGENET_MEAN,
        std=(0.228, 0.224, 0.225), output="cls",
        output_detail="class token after the final LayerNorm (the authors' linear-probe features, "
        "forward_features with lin_probe=True, linear_type='standard')", embed_dim=1024,
        how_to_get="download the PanDerm (ViT-L/16) weights from the Google Drive link in "
        "github.com/SiyuanYan1/PanDerm",
        card="github.com/SiyuanYan1/PanDerm classification/models/builder.py: get_eval_transforms = Resize(256) "
        "(shorter side, torchvision's default bilinear), CenterCrop(224), Normalize(mean (0.485, 0.456, 0.406), "
        "std (0.228, 0.224, 0.225)); PanDerm_Large_LP = panderm_large_patch16_224 (models/modeling_finetune.py: "
        "q_bias/v_bias, layer scale, fixed 2-D sin-cos pos_embed), loaded from checkpoint['model'] with "
        "'encoder.' removed; README: CC-BY-NC-ND 4.0",
        status="unconfirmed: the pretraining leftovers in the checkpoint are taken from CAE's model "
        "(github.com/Atten4Vis/CAE); the released file itself was not inspected",
        notes="Built as timm's BEiT, whose key names are the authors' CAE encoder's, with an absolute pos_embed and "
        "no relative position bias; the 'encoder.' prefix is stripped (layout panderm) and the CAE pretraining "
        "modules are dropped by prefix. Any other difference stops the load with the differing keys.",
        adapter={"arch_library": "timm", "arch": "beit_large_patch16_224", "layout": "panderm",
                 "create_kwargs": {"use_abs_pos_emb": True, "use_rel_pos_bias": False, "init_values": 0.1,
                                   "global_pool": "token"},
                 "files": ("panderm_ll_data6_checkpoint-499.pth",),
                 "ignore_prefixes": ("alignment_encoder.", "teacher", "encoder_to_regresser", "rd_pos_embed",
                                     "regresser.", "mask_token", "decoder.")},
    ),
    EncoderSpec(
        name="retfound-cfp", family="RETFound", group="specialty", specialty="ophthalmology (colour fundus)",
        source="local", identifier="YukunZhou/RETFound_mae_natureCFP", hub_repo="YukunZhou/RETFound_mae_natureCFP",
        licence="cc-by-nc-4.0", resize=256, crop=224, mean=IMAGENET_MEAN,
        std=IMAGENET_STD, output="pooled",
        output_detail="mean of the patch tokens (class token excluded) through a LayerNorm at its initial "
        "weight 1, bias 0; the pretrained final norm is not used", embed_dim=1024,
        card="github.com/rmaphoh/RETFound_MAE util/datasets.py build_transform (eval, input_size 224): "
        "Resize(256, bicubic) on the shorter side, CenterCrop(224), ImageNet mean/std; models_vit.py with "
        "global_pool=True (latent_feature.ipynb, main_finetune.py, main_linear_probe.py): x[:, 1:].mean(1) "
        "through fc_norm, a new LayerNorm, the checkpoint's norm deleted; weights "
        "hf_hub_download(YukunZhou/RETFound_mae_natureCFP, RETFound_mae_natureCFP.pth)",
        interpolation="bicubic",
        status="unconfirmed: the licence (cc-by-nc-4.0) was not re-read from the hub model card",
        notes="MAE encoder weights in timm's ViT-L/16 with global_pool='avg' (layout retfound: norm.* replaced by "
        "the authors' fresh fc_norm); the MAE decoder is dropped. The checkpoint also holds an argparse.Namespace, "
        "read with torch.load(weights_only=True) and an explicit allow-list. The authors' feature notebook "
        "instead squashes to 224x224 and z-scores each image; the eval transform is used because the published "
        "results come from it. Gated on the hub.",
        adapter={"arch_library": "timm", "arch": "vit_large_patch16_224", "layout": "retfound",
                 "create_kwargs": {"global_pool": "avg"}, "files": ("RETFound_mae_natureCFP.pth",),
                 "ignore_prefixes": ("decoder", "mask_token")},
    ),
    EncoderSpec(
        name="rad-dino", family="RAD-DINO", group="specialty", specialty="chest X-ray", source="transformers",
        identifier="microsoft/rad-dino", hub_repo="microsoft/rad-dino", licence="mit",
        revision="c3736a62544137a0450cc4fa02c9e37e55f28e32",
        resize=518, mean=(0.5307, 0.5307, 0.5307), std=(0.2583, 0.2583, 0.2583),
        output="cls", output_detail="pooler_output: class token after the final LayerNorm", embed_dim=768,
        card="BitImageProcessor: resize shortest edge 518 bicubic, centre-crop 518, mean 0.5307, std 0.2583",
        interpolation="bicubic",
        notes="Licence changed from MSRLA to MIT on the hub (#9); pin a revision to fix the terms you use.",
        adapter={"kind": "dinov2"},
    ),
    EncoderSpec(
        name="chexzero", family="CheXzero", group="specialty", specialty="chest X-ray", source="local",
        identifier="rajpurkarlab/CheXzero (best_64_5e-05_original_22000_0.864.pt)",
        licence="mit", resize=224, mean=(101.48761 / 255,) * 3, std=(83.43944 / 255,) * 3,
        output="projected", output_detail="CLIP encode_image, before L2 normalisation", embed_dim=512,
        how_to_get="download the CheXzero checkpoints from the Google Drive link in github.com/rajpurkarlab/CheXzero",
        card="CheXzero: longer side to 320 keeping the aspect ratio, padded black to 320x320, then resize 224 "
        "bicubic; Normalize(101.48761, 83.43944) on 0-255 pixels (github.com/rajpurkarlab/CheXzero "
        "data_process.py preprocess, zero_shot.py make; load_clip: clip.load('ViT-B/32') then "
        "load_state_dict(torch.load(model_path)))",
        interpolation="bicubic", pixel_rule="pad",
        status="unconfirmed: which of the released checkpoints is canonical",
        notes="OpenAI ViT-B/32 CLIP state dict as torch.save(model.state_dict()) writes it (visual.* plus the text "
        "tower), loaded into open_clip's ViT-B-32 vision tower (QuickGELU); the text tower is not built. The "
        "authors resize twice (PIL antialiased to 320, then a tensor Resize to 224); the engine resizes once.",
        adapter={"arch_library": "open_clip", "model": "ViT-B-32", "config_overrides": {"quick_gelu": True},
                 "files": ("best_64_5e-05_original_22000_0.864.pt",)},
    ),
)
