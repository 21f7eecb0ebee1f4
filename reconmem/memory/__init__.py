"""The ReConMem method: the dual memory graph, its construction, recall and the ContextManager."""
