"""Column names of the per-molecule orientations table (our Parquet schema).

``id``, ``r00`` … ``r22`` (rows of R), ``qx qy qz qw`` (scalar-last
quaternion, w ≥ 0), ``ev1 ev2 ev3`` (eigenvalues), ``cx cy cz`` (centroid, Å),
``degenerate``, ``reason``, ``symmetry`` (what the symmetry leaves of the pose:
"" for a full frame, else single_atom, spherical_top, linear, prolate_top or
oblate_top), ``orientation`` ("none", "axis" or "full") and ``defined_axis``
(1 or 3 for the axis class, else 0), and for each axis a in 1..3
``lon{a}``/``lat{a}`` (degrees) for the Mollweide map.
"""

R_COLUMNS = [f"r{i}{j}" for i in range(3) for j in range(3)]
Q_COLUMNS = ["qx", "qy", "qz", "qw"]
EV_COLUMNS = ["ev1", "ev2", "ev3"]
C_COLUMNS = ["cx", "cy", "cz"]
LONLAT_COLUMNS = [f"{c}{a}" for a in (1, 2, 3) for c in ("lon", "lat")]
ORIENTATION_COLUMN = "orientation"
AXIS_COLUMN = "defined_axis"
