"""Model and replay memory files: zip archives of JSON and tensors or ``.npy`` arrays, never pickles.

:mod:`~sb3_acer.serialization.model_file` reads and writes the model file;
:mod:`~sb3_acer.serialization.replay_file` the replay memory, alone or embedded in a model file.
"""
