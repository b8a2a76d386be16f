"""What students receive: handouts made from ``solutions/`` (``handout``, ``handouts``),
their notebook form (``notebook``) and the student bundle (``bundle``), which ships each
lab's record and ``public/`` files and never its ``hidden/`` ones."""
