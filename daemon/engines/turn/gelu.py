"""Smart Turn's exact GELUs as ONNX Runtime's one-pass ``Gelu`` operator.

The exported graph spells each GELU as five elementwise operators (divide, erf,
add, two multiplies), each a pass over the activations; ONNX Runtime's own fusion
does not match this order of the multiplies. The fused operator computes the same
formula, float32 on every CPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import onnx


def fuse_gelu(model: onnx.ModelProto) -> int:
    """Replace each exact GELU, ``x * (0.5 * (erf(x / sqrt 2) + 1))`` as exported, by
    ONNX Runtime's ``Gelu`` (the same formula in one pass); returns how many.

    ONNX Runtime's own fusion does not match the exported order of the multiplies.
    """
    from onnx import helper, numpy_helper

    graph = model.graph
    stored = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    outputs = {o.name for o in graph.output}

    def const(name: str, value: float) -> bool:
        v = stored.get(name)
        return v is not None and v.size == 1 and abs(float(v.reshape(())) - value) < 1e-6

    def only(name: str, op: str) -> onnx.NodeProto | None:
        users = consumers.get(name, [])
        if len(users) != 1 or users[0].op_type != op or name in outputs:
            return None
        return users[0]

    drop: set[int] = set()
    replace: dict[int, onnx.NodeProto] = {}
    for div in graph.node:
        if div.op_type != "Div" or not const(div.input[1], 2**0.5):
            continue
        x = div.input[0]
        erf = only(div.output[0], "Erf")
        add = erf and only(erf.output[0], "Add")
        half = add and only(add.output[0], "Mul")
        last = half and only(half.output[0], "Mul")
        if not (erf and add and half and last):
            continue
        if not const([i for i in add.input if i != erf.output[0]][0], 1.0):
            continue
        if not const([i for i in half.input if i != add.output[0]][0], 0.5):
            continue
        if sorted(last.input) != sorted([x, half.output[0]]):
            continue
        gelu = helper.make_node("Gelu", [x], list(last.output), domain="com.microsoft")
        drop.update(id(n) for n in (div, erf, add, half))
        replace[id(last)] = gelu
    if not replace:
        return 0
    nodes = [replace.get(id(n), n) for n in graph.node if id(n) not in drop]
    del graph.node[:]
    graph.node.extend(nodes)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return len(replace)
