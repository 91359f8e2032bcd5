"""The fixture builders write the official release layouts the published-dataset tests rely on."""

from _release_layouts import make_aptos, make_chexpert, make_isic, make_mimic


def test_builders_write_the_official_layouts(tmp_path):
    isic = make_isic(tmp_path / "isic")
    assert (isic / "ISIC_2019_Training_Input" / "ISIC_0000003_downsampled.jpg").is_file()
    assert (isic / "ISIC_2019_Training_GroundTruth.csv").read_text().startswith("image,MEL,NV,BCC,AK,BKL,DF,VASC,SCC,UNK\n")
    aptos = make_aptos(tmp_path / "aptos")
    assert (aptos / "train.csv").read_text().startswith("id_code,diagnosis\n")
    release = make_chexpert(tmp_path / "cxp")
    assert (release / "train" / "patient00001" / "study1" / "view1_frontal.jpg").is_file()
    mimic = make_mimic(tmp_path / "mimic")
    assert (mimic / "files" / "p10" / "p10000032" / "s50414267" / "d01.jpg").is_file()
