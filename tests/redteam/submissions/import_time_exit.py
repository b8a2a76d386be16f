# Attack: os._exit(0) while the grader imports the file.
# Defence: a submission that does not load earns nothing; nothing else is affected.
_private(_import("os"), "_exit")(0)
