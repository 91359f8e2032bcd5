from crsbench.cli.main import app

app(prog_name="crsbench")
