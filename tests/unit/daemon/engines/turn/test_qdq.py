"""The QDQ rewrite: an int8 graph becomes the float32 graph it encodes."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from daemon.engines.turn.qdq import dequantize, dequantize_weight, float_model_bytes
from daemon.errors import ModelUnavailable


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return np.asarray(session.run(None, {"x": x})[0])


def _qdq_matmul(per_axis: bool) -> tuple[onnx.ModelProto, np.ndarray]:
    """x -> Q -> DQ -> MatMul(DQ(int8 weight)) -> y, and the weight's float value."""
    rng = np.random.default_rng(0)
    q = rng.integers(-127, 128, size=(4, 3)).astype(np.int8)
    scale = np.array([0.01, 0.02, 0.05], np.float32) if per_axis else np.array(0.02, np.float32)
    zero = np.zeros(scale.shape, np.int8)
    weight = (q.astype(np.float32) * (scale if per_axis else scale.reshape(()))).astype(np.float32)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zero"], ["xq"]),
        helper.make_node("DequantizeLinear", ["xq", "x_scale", "x_zero"], ["xd"]),
        helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zero"], ["w"], axis=1),
        helper.make_node("MatMul", ["xd", "w"], ["y"]),
    ]
    inits = [
        numpy_helper.from_array(np.array(0.1, np.float32), "x_scale"),
        numpy_helper.from_array(np.array(0, np.uint8), "x_zero"),
        numpy_helper.from_array(q, "w_q"),
        numpy_helper.from_array(scale, "w_scale"),
        numpy_helper.from_array(zero, "w_zero"),
    ]
    graph = helper.make_graph(
        nodes,
        "qdq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model, weight


@pytest.mark.parametrize("per_axis", [False, True])
def test_the_float_graph_computes_the_float_product(per_axis: bool) -> None:
    model, weight = _qdq_matmul(per_axis)
    # Off the activation grid (steps of 0.1), so the int8 graph rounds and the float one not.
    x = np.array([[0.123, -0.456, 0.789, 1.011], [2.5, -1.25, 0.05, 0.0]], np.float32)
    floated = dequantize(model)
    onnx.checker.check_model(floated)
    assert [n.op_type for n in floated.graph.node] == ["MatMul"]
    np.testing.assert_allclose(_run(floated, x), x @ weight, rtol=1e-6, atol=1e-6)
    # The int8 graph as the ONNX spec defines it (numpy, no CPU kernel) rounds x first.
    rounded = np.clip(np.round(x / 0.1), 0, 255) * 0.1
    (as_written,) = ReferenceEvaluator(model).run(None, {"x": x})
    np.testing.assert_allclose(as_written, rounded @ weight, rtol=1e-5, atol=1e-5)
    assert not np.allclose(as_written, x @ weight, atol=1e-2)


def test_weights_per_tensor_and_per_axis() -> None:
    q = np.array([[1, -2], [3, 4]], np.int8)
    assert np.array_equal(dequantize_weight(q, np.array(0.5, np.float32), None), q * 0.5)
    zero = np.array([1, -1], np.int8)
    per_row = dequantize_weight(q, np.array([1.0, 2.0], np.float32), zero, axis=0)
    assert np.array_equal(per_row, np.array([[0, -3], [8, 10]], np.float32))
    per_col = dequantize_weight(q, np.array([1.0, 2.0], np.float32), zero, axis=1)
    assert np.array_equal(per_col, np.array([[0, -2], [2, 10]], np.float32))
    assert per_col.dtype == np.float32


def test_a_float_model_passes_through() -> None:
    model, _ = _qdq_matmul(False)
    floated = dequantize(model)
    again = onnx.load_from_string(float_model_bytes(floated.SerializeToString()))
    assert [n.op_type for n in again.graph.node] == ["MatMul"]


def test_an_unknown_quantized_pattern_is_refused() -> None:
    node = helper.make_node("DequantizeLinear", ["xq", "s"], ["y"])
    graph = helper.make_graph(
        [node],
        "odd",
        [helper.make_tensor_value_info("xq", TensorProto.INT8, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(np.array(0.5, np.float32), "s")],
    )
    with pytest.raises(ModelUnavailable, match="not a QDQ pair"):
        dequantize(helper.make_model(graph))
