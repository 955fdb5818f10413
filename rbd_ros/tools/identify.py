"""rbd_identify: a recorded rosbag2 of joint states + the robot's URDF -> the
URDF with identified inertial parameters (and joint friction), or the
estimate of an unknown payload; a text summary and a picture of measured vs
predicted torques on held-out data.

    rbd_identify BAG --urdf robot.urdf --out robot_identified.urdf [--report report.png]
    rbd_identify BAG --urdf robot_identified.urdf --payload tool0 [--out robot_with_payload.urdf]

The last ``--holdout`` fraction of the recording (by time) is not used for
fitting: the RMS errors printed for it, and the picture, are predictions.
Joints that do not move in the recording (gripper fingers, a locked joint)
keep the URDF's friction, and the bodies only they move keep their
``<inertial>``: the summary lists them and why (``--strict`` refuses such a
recording instead).
Exit status 0 on success, 2 with one ``rbd_identify: error: ...`` line on
stderr for a bad bag, URDF or too little excitation.  See doc/calibrate.md.
"""
import argparse
import sys

import numpy as np

from rbd_ros.core import Model, ModelError, rnea
from rbd_ros.core import friction as friction_torque
from rbd_ros.core.estimation.identification import (
    DEFAULT_COULOMB_MIN_VELOCITY,
    DEFAULT_MIN_MOVING_FRACTION,
    DEFAULT_PRIOR_WEIGHT,
    DEFAULT_VELOCITY_EPS,
    ExcitationError,
    identify,
)
from rbd_ros.core.estimation.payload_identification import identify_payload
from rbd_ros.core.model.urdf_write import identified_urdf
from rbd_ros.tools.recording import DEFAULT_CUTOFF_HZ, RecordingError, prepare, read_joint_states

DEFAULT_MAX_COND = 1000.0


def build_parser():
    p = argparse.ArgumentParser(prog="rbd_identify", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("bag", help="rosbag2 folder (sqlite3 or MCAP) with sensor_msgs/JointState incl. efforts")
    p.add_argument("--urdf", required=True, help="the robot's URDF file (the prior, and the text written back)")
    p.add_argument("--out", help="write the identified URDF here (with --payload: the URDF plus a payload link)")
    p.add_argument("--payload", metavar="LINK", help="identify only an unknown payload on LINK (use the robot's "
                   "identified URDF): mass, com, inertia with uncertainty")
    p.add_argument("--report", metavar="PNG", help="picture of measured vs predicted torques on held-out data")
    p.add_argument("--topic", help="JointState topic (default: the bag's only one, else /joint_states)")
    p.add_argument("--cutoff", type=float, default=DEFAULT_CUTOFF_HZ,
                   help=f"low-pass cut-off in Hz for q, qd, tau before differentiating (default {DEFAULT_CUTOFF_HZ:g})")
    p.add_argument("--holdout", type=float, default=0.2, help="fraction of the recording (its end) kept out of the "
                   "fit for the held-out check (default 0.2)")
    p.add_argument("--no-friction", action="store_true", help="do not identify viscous and Coulomb friction")
    p.add_argument("--no-armature", action="store_true", help="do not identify rotor inertia (armature)")
    p.add_argument("--prior-weight", type=float, default=DEFAULT_PRIOR_WEIGHT,
                   help=f"pull toward the URDF's values (default {DEFAULT_PRIOR_WEIGHT:g}; see doc/calibrate.md)")
    p.add_argument("--velocity-eps", type=float, default=DEFAULT_VELOCITY_EPS,
                   help=f"Coulomb smoothing tanh(qd/eps), rad/s (default {DEFAULT_VELOCITY_EPS:g}, the node's)")
    p.add_argument("--max-cond", type=float, default=DEFAULT_MAX_COND,
                   help=f"refuse recordings whose regressor condition number exceeds this "
                   f"(default {DEFAULT_MAX_COND:g})")
    p.add_argument("--strict", action="store_true", help="refuse a recording in which a joint does not move "
                   "(default: such joints keep the URDF's friction and the bodies only they move keep their "
                   "inertials; the summary lists them)")
    p.add_argument("--min-moving", type=float, default=DEFAULT_MIN_MOVING_FRACTION, metavar="FRACTION",
                   help=f"a joint faster than {DEFAULT_COULOMB_MIN_VELOCITY:g} rad/s (m/s) in fewer than this "
                   f"fraction of the samples does not move (default {DEFAULT_MIN_MOVING_FRACTION:g})")
    p.add_argument("--armature", nargs="+", type=float, metavar="A",
                   help="known rotor inertia per joint (URDF joint order; one value for all): URDF has no element "
                   "for it, so pass what an earlier rbd_identify printed (with --payload, or with --no-armature)")
    p.add_argument("--ignore-joints", nargs="*", default=[], metavar="NAME",
                   help="joints in the bag that the URDF does not have and that may be ignored")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


class _Progress:
    """A tqdm bar on stderr (or nothing with --quiet)."""
    def __init__(self, quiet, desc):
        self.bar = None
        self.quiet, self.desc = quiet, desc

    def __call__(self, done, total):
        if self.quiet:
            return
        if self.bar is None:
            from tqdm import tqdm  # heavy optional dependency (the identification extra)
            self.bar = tqdm(total=total, desc=self.desc, unit="msg" if "read" in self.desc else "sample",
                            file=sys.stderr, leave=False, dynamic_ncols=True)
        self.bar.update(done - self.bar.n)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _say(args, text):
    if not args.quiet:
        print(text, file=sys.stderr)


def _split(rec, holdout, cutoff, model):
    t = rec.t
    cut = t[0] + (1.0 - holdout) * (t[-1] - t[0])
    fit_rows, test_rows = t <= cut, t > cut
    out = []
    for rows in (fit_rows, test_rows):
        if rows.sum() < 10:
            out.append(None)
            continue
        s = prepare(t[rows], rec.position[rows], None if rec.velocity is None else rec.velocity[rows],
                    rec.effort[rows], cutoff_hz=cutoff)
        out.append(s)
    if out[0] is None:
        raise RecordingError("the recording is too short to fit (fewer than 10 samples before the held-out part)")
    return out


def _predict(model, s, eps):
    return rnea(model, s.q, s.v, s.a) + friction_torque(model, s.v, eps)


def _rms(x):
    return np.sqrt(np.mean(np.square(x), axis=0))


def _payload_urdf(text, link, est):
    """The URDF text with a link ``<link>_payload`` (the estimate) fixed to ``link``, before </robot>."""
    name = f"{link}_payload"
    c, I = est.com, est.inertia
    block = (f"  <link name=\"{name}\">\n    <inertial>\n      <origin xyz=\"{c[0]:.12g} {c[1]:.12g} {c[2]:.12g}\" "
             f"rpy=\"0 0 0\"/>\n      <mass value=\"{est.mass:.12g}\"/>\n      <inertia ixx=\"{I[0, 0]:.12g}\" "
             f"ixy=\"{I[0, 1]:.12g}\" ixz=\"{I[0, 2]:.12g}\" iyy=\"{I[1, 1]:.12g}\" iyz=\"{I[1, 2]:.12g}\" "
             f"izz=\"{I[2, 2]:.12g}\"/>\n    </inertial>\n  </link>\n  <joint name=\"{name}_joint\" type=\"fixed\">\n"
             f"    <parent link=\"{link}\"/>\n    <child link=\"{name}\"/>\n  </joint>\n")
    end = text.rindex("</robot>")
    return text[:end] + block + text[end:]


def plot_report(path, names, t, measured, before, after, title):
    """PNG: one panel per joint, measured (black), before (red dashed), after (blue)."""
    import matplotlib  # heavy optional dependency (the identification extra)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # (after choosing the Agg backend)
    n = len(names)
    fig, axes = plt.subplots(n, 1, figsize=(7.5, 1.15 * n + 0.6), sharex=True, squeeze=False)
    for k, ax in enumerate(axes[:, 0]):
        ax.plot(t, measured[:, k], color="k", lw=1.2, label="measured")
        ax.plot(t, before[:, k], color="tab:red", lw=0.9, ls="--", label="URDF before")
        ax.plot(t, after[:, k], color="tab:blue", lw=0.9, label="identified")
        ax.set_ylabel(f"{names[k]}\nN·m", fontsize=7)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=7, ncol=3, loc="upper right")
    axes[0, 0].set_title(title, fontsize=8)
    axes[-1, 0].set_xlabel("t (s, held-out part of the recording)", fontsize=7)
    fig.tight_layout(h_pad=0.2)
    fig.savefig(path, dpi=72)
    plt.close(fig)


def run(args):
    try:
        model = Model.from_urdf(args.urdf)
    except ModelError as e:
        raise RecordingError(f"--urdf {args.urdf}: {e}") from None
    with open(args.urdf, encoding="utf-8") as f:
        urdf_text = f.read()
    if args.armature:
        arm = args.armature * model.nv if len(args.armature) == 1 else args.armature
        try:
            model = model.with_armature(np.array(arm, dtype=float))
        except ValueError as e:
            raise RecordingError(f"--armature: {e}") from None
    bad = [n for n, t in zip(model.joint_names, model.joint_types) if t in ("floating", "planar")]
    if bad:
        raise RecordingError(f"--urdf: joints {bad} are floating or planar; rbd_identify handles fixed-base robots "
                             "with revolute, continuous and prismatic joints")
    if not 0 <= args.holdout < 1:
        raise RecordingError(f"--holdout: expected a fraction in [0, 1), got {args.holdout}")
    bar = _Progress(args.quiet, "reading bag")
    try:
        rec = read_joint_states(args.bag, topic=args.topic, joints=model.joint_names, progress=bar)
    finally:
        bar.close()
    known = set(model.joint_names) | set(model.mimic_joints) | set(args.ignore_joints)
    unknown = [n for n in rec.all_names if n not in known]
    if unknown:
        raise RecordingError(f"bag joints {unknown} are not joints of {args.urdf} (its joints: "
                             f"{list(model.joint_names)}): wrong URDF? Pass --ignore-joints {' '.join(unknown)} "
                             "to identify anyway")
    _say(args, f"read {len(rec.t)} joint states from {rec.topic} ({rec.t[-1] - rec.t[0]:.1f} s"
         + (f", {rec.skipped} messages without all joints skipped" if rec.skipped else "") + ")")
    fit, test = _split(rec, args.holdout, args.cutoff, model)
    _say(args, f"fitting on {len(fit.t)} filtered samples (cut-off {args.cutoff:g} Hz)"
         + (f", checking on {len(test.t)}" if test is not None else ""))
    eps = args.velocity_eps
    still = []
    bar = _Progress(args.quiet, "regressor")
    try:
        if args.payload:
            est = identify_payload(model, args.payload, fit.q, fit.v, fit.a, fit.tau, velocity_eps=eps,
                                   max_condition=args.max_cond)
            new_model = model.with_payload(args.payload, est.mass, est.com, est.inertia)
            print(est.summary())
            out_text = _payload_urdf(urdf_text, args.payload, est) if args.out else None
            notes = []
        else:
            new_model, report = identify(model, fit.q, fit.v, fit.a, fit.tau, friction=not args.no_friction,
                                         armature=not args.no_armature, prior_weight=args.prior_weight,
                                         velocity_eps=eps, max_condition=args.max_cond, progress=bar,
                                         strict=args.strict, min_moving_fraction=args.min_moving)
            print(report.summary())
            still = report.still_dofs
            moving = [n for n in model.joint_names if n not in still]
            out_text, notes = identified_urdf(urdf_text, new_model, bodies=report.identified_bodies,
                                              dynamics=not args.no_friction, joints=moving) \
                if args.out else (None, [])
            if not args.no_armature:
                print("armature (no URDF element: the node's `armature` parameter, rbd_identify --armature; "
                      f"joint order): [{', '.join(f'{x:.6g}' for x in new_model.armature)}]")
    finally:
        bar.close()
    if test is not None:
        before, after = _predict(model, test, eps), _predict(new_model, test, eps)
        rb, ra = _rms(before - test.tau), _rms(after - test.tau)
        print("held-out torque RMS error (N m):")
        for n, b, a in zip(model.joint_names, rb, ra):
            print(f"{n:>16} {b:11.4g} {a:10.4g}" + ("   (still: not fitted)" if n in still else ""))
        print(f"{'all':>16} {np.sqrt(np.mean(rb ** 2)):11.4g} {np.sqrt(np.mean(ra ** 2)):10.4g}")
        if args.report:
            plot_report(args.report, list(model.joint_names), test.t - test.t[0], test.tau, before, after,
                        f"{'payload on ' + args.payload if args.payload else 'identification'}: held-out RMS "
                        f"{np.sqrt(np.mean(rb ** 2)):.3g} -> {np.sqrt(np.mean(ra ** 2)):.3g} N·m")
            _say(args, f"wrote {args.report}")
    elif args.report:
        _say(args, "no held-out data (--holdout 0): no report picture")
    for n in notes:
        print(f"note: {n}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(out_text)
        _say(args, f"wrote {args.out}")
    return new_model


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        run(args)
    except (RecordingError, ExcitationError, ModelError, ValueError, OSError) as e:
        print(f"rbd_identify: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
