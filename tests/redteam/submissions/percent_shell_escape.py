# %% Attack: an IPython shell escape and a cell magic in a percent-format .py file.
!cat /etc/shadow
# %%bash
# rm -rf ~
