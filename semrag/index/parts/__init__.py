"""The parts of an index: what each change of the corpus is applied to.

Dense (:mod:`~semrag.index.parts.dense`, or a vector store through
:mod:`~semrag.index.parts.external`), BM25 (:mod:`~semrag.index.parts.sparse`), the
semantic similarity graph (:mod:`~semrag.index.parts.ssg`,
:mod:`~semrag.index.parts.live_ssg`, :mod:`~semrag.index.parts.knn`), SKETCH's pieces
(:mod:`~semrag.index.parts.pieces`) and PPR's passage phrases
(:mod:`~semrag.index.parts.passages`), held together by
:class:`~semrag.index.parts.part_set.PartSet`.
"""
