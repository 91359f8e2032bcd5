from crsbench.cli import app

app(prog_name="crsbench")
