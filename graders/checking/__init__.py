"""The check framework every lab's checks are written against, shipped in the student
bundle for the public checks: the registry of checks (``registry``), the ``@check``
decorator and the ``Session`` (``framework``), statuses (``status``), value descriptions
(``values``), feedback text (``feedback``), comparisons (``compare``), hypothesis
strategies (``strategies``) and the measured work of performance tasks (``measures``,
``performance``, ``step_model``)."""
