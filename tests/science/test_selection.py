"""Points inside a drawn polygon (the map's lasso), on constructed points with known answers."""

import numpy as np
import pytest

from orientscope.science.selection import points_in_polygon


def test_a_square_holds_the_points_inside_it_and_not_those_outside():
    x = np.array([0.5, 0.1, 0.9, 1.5, -0.1, 0.5, 0.5])
    y = np.array([0.5, 0.9, 0.1, 0.5, 0.5, 1.2, -0.3])
    inside = points_in_polygon(x, y, np.array([0, 1, 1, 0]), np.array([0, 0, 1, 1]))
    assert inside.tolist() == [True, True, True, False, False, False, False]


def test_a_concave_polygon_leaves_out_its_notch():
    # an L: the unit square [0, 2]^2 without its upper right quarter [1, 2] x [1, 2]
    px, py = np.array([0, 2, 2, 1, 1, 0]), np.array([0, 0, 1, 1, 2, 2])
    x = np.array([0.5, 1.5, 0.5, 1.5])
    y = np.array([0.5, 0.5, 1.5, 1.5])
    assert points_in_polygon(x, y, px, py).tolist() == [True, True, True, False]


def test_the_answer_does_not_depend_on_the_winding_or_the_first_vertex():
    rng = np.random.default_rng(3)
    x, y = rng.uniform(-2, 2, (2, 500))
    angles = np.sort(rng.uniform(0, 2 * np.pi, 12))
    radii = rng.uniform(0.8, 1.6, 12)
    px, py = radii * np.cos(angles), radii * np.sin(angles)  # a star-shaped polygon around the origin
    inside = points_in_polygon(x, y, px, py)
    assert inside.any() and not inside.all()
    assert np.array_equal(inside, points_in_polygon(x, y, px[::-1], py[::-1]))
    assert np.array_equal(inside, points_in_polygon(x, y, np.roll(px, 5), np.roll(py, 5)))
    # a star-shaped polygon around the origin holds a point iff its radius is below the edge's at that angle
    t = np.arctan2(y, x) % (2 * np.pi)
    k = np.searchsorted(angles, t) % 12
    j = (k - 1) % 12
    # the edge from vertex j to vertex k, crossed by the ray from the origin at angle t
    ax, ay, bx, by = px[j], py[j], px[k], py[k]
    dx, dy = np.cos(t), np.sin(t)
    edge_r = (ax * by - ay * bx) / (dx * (by - ay) - dy * (bx - ax))
    assert np.array_equal(inside, np.hypot(x, y) < edge_r)


def test_a_polygon_of_fewer_than_three_vertices_is_refused():
    with pytest.raises(ValueError, match="at least 3 vertices"):
        points_in_polygon(np.zeros(2), np.zeros(2), np.array([0, 1]), np.array([0, 1]))
