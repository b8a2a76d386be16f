"""nbgrader: the course folder with source and release notebooks (``course``), the
executing preprocessor that grades a notebook (``execute``) and the autograder test cells
(``tests``)."""
