"""The population trainer against Stable-Baselines3's own ``PPO.train()``, on real Beam Rider rollouts (tiny budgets)."""

import copy

import numpy as np
import pytest
import torch as th
from stable_baselines3 import PPO

from rl_gns import NoiseScaleConfig, NoiseScalePPO, make_atari_vec_env
from rl_gns.core.agents.defaults import optimizer_policy_kwargs
from rl_gns.core.agents.measure import measure_rollout
from rl_gns.core.agents.policies import ChannelsLastCnnPolicy
from rl_gns.core.agents.population import Population, PopulationPolicy, check_members, population_update
from rl_gns.core.agents.population_measure import measure_population
from rl_gns.core.maths.schemes import SCHEMES

pytestmark = pytest.mark.atari

#: Members differ in seed and learning rate only; 2 envs x 32 steps = 64-sample rollouts, 4 minibatches of 16, 3 epochs.
SHARED = dict(n_steps=32, batch_size=16, n_epochs=3, clip_range=0.2, ent_coef=0.01, device="cpu")
SEEDS = (3, 4, 5)
LEARNING_RATES = (2.5e-4, 1e-3, 4e-3)
#: The one-step regime (one epoch of one minibatch, the whole rollout; RMSprop; no advantage normalisation; GAE λ 1).
ONE_STEP = dict(
    n_epochs=1, batch_size=64, normalize_advantage=False, gae_lambda=1.0, policy_kwargs=optimizer_policy_kwargs("rmsprop")
)


def member_with_rollout(policy: str, backend: str, seed: int, learning_rate: float, **overrides) -> PPO:
    """A PPO on Beam Rider whose rollout buffer holds one rollout, its logger set up as ``learn`` sets it: SB3's own
    with the MLP on RAM, rl-gns's (measurement off, channels-last weights on a CPU) with the Nature CNN on pixels."""
    env = make_atari_vec_env("BeamRider", 2, seed=seed, backend=backend)
    settings = {**SHARED, **overrides}
    if policy == "CnnPolicy":
        model: PPO = NoiseScalePPO(policy, env, seed=seed, learning_rate=learning_rate, noise_scale=None, **settings)
    else:
        model = PPO(policy, env, seed=seed, learning_rate=learning_rate, **settings)
    _, callback = model._setup_learn(model.n_steps * model.n_envs, callback=None)
    callback.on_training_start(locals(), globals())
    assert model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=model.n_steps)
    return model


def trained_apart_and_together(
    policy: str, backend: str, k: int, learning_rates: tuple[float, ...] = LEARNING_RATES, **overrides
) -> tuple[list[PPO], list[PPO]]:
    """K members trained one by one with ``PPO.train()``, and the same K (same rollouts) with one population update."""
    apart, together = [], []
    for seed, learning_rate in zip(SEEDS[:k], learning_rates[:k], strict=True):
        apart.append(member_with_rollout(policy, backend, seed, learning_rate, **overrides))
        together.append(member_with_rollout(policy, backend, seed, learning_rate, **overrides))
        assert np.array_equal(apart[-1].rollout_buffer.observations, together[-1].rollout_buffer.observations)
    for seed, model in zip(SEEDS, apart, strict=False):
        np.random.seed(seed)  # SB3 draws its minibatch permutations from NumPy's global generator
        model.train()
    check_members(together)
    population_update(together, PopulationPolicy([m.policy for m in together]), [np.random.RandomState(s) for s in SEEDS[:k]])
    return apart, together


def max_difference(a: PPO, b: PPO) -> float:
    """Largest absolute difference between two agents' parameters and optimiser moments (Adam's ``exp_avg`` and
    ``exp_avg_sq``, RMSprop's ``square_avg``); their step counts equal."""
    diffs = []
    for p, q in zip(a.policy.parameters(), b.policy.parameters(), strict=True):
        state_a, state_b = a.policy.optimizer.state[p], b.policy.optimizer.state[q]
        assert th.equal(state_a["step"], state_b["step"])
        assert state_a.keys() == state_b.keys()
        diffs += [(p - q).abs().max().item()]
        diffs += [(state_a[key] - state_b[key]).abs().max().item() for key in state_a if key != "step"]
    return max(diffs)


@pytest.mark.parametrize(
    ("overrides", "learning_rates"),
    [
        ({}, LEARNING_RATES),
        ({"clip_range_vf": 0.1, "normalize_advantage": False}, LEARNING_RATES),
        ({"target_kl": 0.002}, LEARNING_RATES),
        ({}, (1e-3, 1e-3, 1e-3)),
        ({"target_kl": 0.001}, (1e-3, 1e-3, 1e-3)),
        ({}, (1e-3, 4e-3, 1e-3)),
        (ONE_STEP, (7e-4, 1.4e-3, 2.8e-3)),
    ],
    ids=["default", "value-clip", "target-kl", "one-lr", "one-lr-target-kl", "two-lrs", "one-step"],
)
def test_one_population_update_equals_ppo_train_for_every_member(overrides, learning_rates):
    """Three members (seeds 3-5; three learning rates, one, or two with one shared by members 0 and 2), MLP on RAM:
    after a full update (3 epochs, clipping, advantage normalisation or none, value clipping, early stop on the KL)
    every member's parameters, Adam moments and steps, and ``train/`` logs equal those of its own ``PPO.train()`` to
    float rounding. Members of one learning rate take one optimiser step together; one that stops early on the KL
    keeps the state it stopped with."""
    apart, together = trained_apart_and_together("MlpPolicy", "ram", 3, learning_rates, **overrides)
    for a, b in zip(apart, together, strict=True):
        initial = member_with_rollout("MlpPolicy", "ram", a.seed, a.learning_rate, **overrides)
        assert any(not th.equal(p, q) for p, q in zip(a.policy.parameters(), initial.policy.parameters(), strict=True))
        assert max_difference(a, b) < 1e-5
        assert a._n_updates == b._n_updates
        for key, value in a.logger.name_to_value.items():
            if key.startswith("train/"):
                assert b.logger.name_to_value[key] == pytest.approx(value, rel=1e-4, abs=1e-6), key
    if "target_kl" in overrides:  # the early stop did trigger, for some member and not for all at once
        assert min(a._n_updates for a in apart) < SHARED["n_epochs"]
        assert len({a._n_updates for a in apart}) > 1


def test_population_of_one_nature_cnn_on_pixels():
    """One member with the Nature CNN on pixels (channels-last weights, as rl-gns uses them on a CPU) trains as its
    own update does, to float rounding."""
    apart, together = trained_apart_and_together("CnnPolicy", "ale_vector", 1)
    assert isinstance(together[0].policy, ChannelsLastCnnPolicy)
    assert max_difference(apart[0], together[0]) < 1e-5


def test_members_must_share_their_settings():
    a = member_with_rollout("MlpPolicy", "ram", 3, 2.5e-4)
    b = member_with_rollout("MlpPolicy", "ram", 4, 2.5e-4, n_epochs=2)
    with pytest.raises(ValueError, match="n_epochs"):
        check_members([a, b])


def lone_agent(seed: int, learning_rate: float) -> NoiseScalePPO:
    """A NoiseScalePPO on Beam Rider RAM with the MLP, measuring every iteration."""
    env = make_atari_vec_env("BeamRider", 2, seed=seed, backend="ram")
    return NoiseScalePPO(
        "MlpPolicy", env, seed=seed, learning_rate=learning_rate, noise_scale=NoiseScaleConfig(every=1), **SHARED
    )


def test_population_of_one_learns_as_a_lone_run():
    """Three iterations of a population of one against ``learn`` of the same agent: the same actions, so the same
    rollouts and updates, to float rounding (the batched forward pass rounds differently from SB3's)."""
    steps = 3 * 64
    lone = lone_agent(3, 1e-3)
    lone.learn(steps)
    member = lone_agent(3, 1e-3)
    Population([member]).learn([steps], [None])
    assert member.num_timesteps == lone.num_timesteps == steps
    flat_actions = member.rollout_buffer.swap_and_flatten(member.rollout_buffer.actions)
    assert np.array_equal(flat_actions, lone.rollout_buffer.actions)  # the lone run's buffer was flattened by train()
    difference = max_difference(lone, member)
    assert difference < 1e-5, difference
    for key in ("gns/b_simple_value", "gns/g2_value_raw", "gns/grad_norm_preclip", "train/value_loss"):
        assert member.logger.name_to_value[key] == pytest.approx(lone.logger.name_to_value[key], rel=1e-3), key


def test_members_leave_when_their_budgets_are_spent():
    """Members with budgets of 2, 3 and 4 iterations: each trains exactly its own budget, measures the noise scale and
    ends with its own parameters."""
    members = [lone_agent(seed, lr) for seed, lr in zip(SEEDS, LEARNING_RATES, strict=True)]
    initial = [[p.detach().clone() for p in m.policy.parameters()] for m in members]
    Population(members).learn([2 * 64, 3 * 64, 4 * 64], [None, None, None])
    assert [m.num_timesteps for m in members] == [2 * 64, 3 * 64, 4 * 64]
    assert [m.iterations for m in members] == [2, 3, 4]
    for member, before in zip(members, initial, strict=True):
        assert any(not th.equal(p, q) for p, q in zip(member.policy.parameters(), before, strict=True))
        assert member.gns_trackers is not None
        assert all(tracker.ema.g2 != 0 for tracker in member.gns_trackers.values())


def test_only_plain_noise_scale_agents_join_a_population():
    env = make_atari_vec_env("BeamRider", 2, seed=3, backend="ram")
    with pytest.raises(ValueError, match="NoiseScalePPO"):
        Population([PPO("MlpPolicy", env, seed=3, **SHARED)])


@pytest.mark.parametrize("clip_range_vf", [None, 0.1], ids=["default", "value-clip"])
def test_population_measurement_equals_measure_rollout_for_every_member(clip_range_vf):
    """Three members measuring both schemes and the three losses together: each member's squared norms equal those of
    ``measure_rollout`` on the same batches (drawn from a copy of its measurement generator), to float rounding, and
    measuring left its parameters, gradients and generators for training as they were."""
    config = NoiseScaleConfig(schemes=("minibatch", "envs"), every=1)
    members = []
    for seed, learning_rate in zip(SEEDS, LEARNING_RATES, strict=True):
        model = NoiseScalePPO(
            "MlpPolicy", make_atari_vec_env("BeamRider", 2, seed=seed, backend="ram"), seed=seed,
            learning_rate=learning_rate, noise_scale=config, clip_range_vf=clip_range_vf, **SHARED,
        )  # fmt: skip
        _, callback = model._setup_learn(model.n_steps * model.n_envs, callback=None)
        callback.on_training_start(locals(), globals())
        assert model.collect_rollouts(model.env, callback, model.rollout_buffer, n_rollout_steps=model.n_steps)
        members.append(model)
    copies = [copy.deepcopy(m._gns_rng) for m in members]
    torch_state = th.get_rng_state()
    measured, seconds = measure_population(members, PopulationPolicy([m.policy for m in members]))
    assert seconds > 0 and th.equal(th.get_rng_state(), torch_state)
    for member, rng, together in zip(members, copies, measured, strict=True):
        assert all(p.grad is None for p in member.policy.parameters())
        for scheme, (_, indices) in member.measurement_batches().items():  # the generator moved on: one draw each
            assert len(indices) == member.gns_sizes[scheme][1]
        for scheme in config.schemes:
            b_small, b_big = member.gns_sizes[scheme]
            alone = measure_rollout(
                member.policy, member.rollout_buffer, SCHEMES[scheme].indices(2, 32, b_big, rng), b_big // b_small,
                config.losses, normalize_advantage=True, clip_range=0.2, clip_range_vf=clip_range_vf, ent_coef=0.01,
                vf_coef=0.5,
            )  # fmt: skip
            for loss in config.losses:
                for got, want in zip(together[scheme][loss], alone[loss], strict=True):
                    assert got == pytest.approx(want, rel=1e-5, abs=1e-12), (scheme, loss)
