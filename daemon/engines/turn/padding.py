"""Smart Turn's convolutional stem, run once over the padding in front of a short clip.

A clip shorter than the 8 s window is zero-padded at the front, and the log-mel
frames that read only that padding are all equal. The Whisper encoder starts with
two convolutions (kernel 3, padding 1, the second with stride 2) and adds the
position embeddings only after them, so the stem's outputs over the equal frames
are equal too, except the first (which also reads the convolutions' own zero
padding). :func:`skip_padding` rewrites the float32 graph to take fewer frames and
a ``positions`` input; :func:`trim` drops ``2 * j`` of the equal frames, and the
rewritten graph gathers the stem's outputs back to the full length with
``positions`` before the embeddings: the same numbers as the full input (the
convolutions compute each output from the same three frames), less convolution.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnx

POSITIONS = "positions"


def skip_padding(model: onnx.ModelProto, input_name: str, stem_length: int) -> bool:
    """Rewrite ``model`` in place for :func:`trim`'s inputs; False if its graph differs.

    The stem's output is the tensor that a ``Transpose`` turns from
    (batch, width, ``stem_length``) into the layout that an ``Add`` sums with a
    stored (``stem_length``, width) position table.
    """
    import onnx
    from onnx import helper

    graph = model.graph
    stored = {t.name: t for t in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}

    def is_table(name: str) -> bool:
        if name not in stored:
            return False
        dims = list(stored[name].dims)
        return len(dims) == 2 and dims[0] == stem_length

    transpose = None
    for node in graph.node:
        if node.op_type != "Add" or node.domain not in ("", "ai.onnx"):
            continue
        for mine, other in ((0, 1), (1, 0)):
            source = producer.get(node.input[other])
            if is_table(node.input[mine]) and source is not None:
                if source.op_type == "Transpose":
                    transpose = source
        if transpose is not None:
            break
    inputs = [i for i in graph.input if i.name == input_name]
    if transpose is None or len(inputs) != 1 or len(graph.input) != 1:
        return False
    dims = inputs[0].type.tensor_type.shape.dim
    if len(dims) != 3:
        return False
    stem = transpose.input[0]
    gathered = f"{stem}_{POSITIONS}"
    gather = helper.make_node("Gather", [stem, POSITIONS], [gathered], axis=2)
    transpose.input[0] = gathered
    nodes = list(graph.node)
    nodes.insert(nodes.index(transpose), gather)
    del graph.node[:]
    graph.node.extend(nodes)
    dims[2].Clear()
    dims[2].dim_param = "frames"
    graph.input.append(
        helper.make_tensor_value_info(POSITIONS, onnx.TensorProto.INT64, [stem_length])
    )
    # Stored shapes name the full length; ONNX Runtime infers the shorter ones.
    del graph.value_info[:]
    return True


def equal_leading_frames(features: np.ndarray) -> int:
    """How many of the first frames (columns) of ``features`` equal the first."""
    same = np.all(features == features[:, :1], axis=0)
    return len(same) if same.all() else int(np.argmin(same))


def trim(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The frames to give the rewritten graph, and the ``positions`` that restore them.

    With ``s`` equal leading frames, the stem's outputs ``1 .. (s - 3) // 2`` are
    equal; dropping ``2 * j`` frames, ``j = (s - 5) // 2``, shifts output ``u >= 1``
    to ``u - j`` and leaves output 0 as it was, so position ``u`` reads output 0 for
    ``u = 0``, output 1 for ``1 <= u <= j`` and output ``u - j`` after.
    """
    frames = features.shape[-1]
    j = max(0, (equal_leading_frames(features) - 5) // 2)
    length = frames // 2
    positions = np.concatenate(
        [np.zeros(1, np.int64), np.ones(j, np.int64), np.arange(1, length - j, dtype=np.int64)]
    )
    return np.ascontiguousarray(features[:, 2 * j :]), positions
