"""Model and replay memory files: zip archives of JSON and tensors or ``.npy`` arrays, never pickles.

- :mod:`~sb3_acer.common.save_util.model_file`: the model file's layout (reading and writing the archive);
- :mod:`~sb3_acer.common.save_util.model_io`: what a model file means (read, checked, written), apart
  from any algorithm (the algorithm gathers and restores its own state: :mod:`sb3_acer.common.base_class`);
- :mod:`~sb3_acer.common.save_util.replay_file`: the replay memory, alone or embedded in a model file;
- :mod:`~sb3_acer.common.save_util.rng_state`: the random generators' states, as JSON.
"""
