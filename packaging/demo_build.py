"""``python packaging/demo_build.py [OUT_DIR]``: the synthetic demo dataset (default
``resources/demo``), answers known by construction; fixed seeds, so reruns are byte-identical.
See README below for the files written."""

from __future__ import annotations

import json
import math
import random
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

SEED = 20250101
SIZE = (320, 240)
BG = (246, 244, 238)
INK = (30, 30, 30)
# Shapes are drawn without anti-aliasing, so every shape pixel has exactly its colour.
COLOURS = {
    "red": (220, 30, 30),
    "blue": (30, 80, 220),
    "green": (30, 160, 60),
    "yellow": (240, 200, 20),
    "purple": (130, 50, 170),
    "orange": (245, 130, 20),
}
COUNTABLE = ("circle", "square", "triangle")  # shapes a counting question may ask about
MODELS = ("toy-vlm-7b", "toy-vlm-2b", "toy-vlm-13b", "toy-vlm-1b")
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "resources" / "demo"


# -- drawing ------------------------------------------------------------------------------------


@cache
def font(size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=size)


@dataclass(frozen=True)
class Shape:
    kind: str  # circle, square, triangle or star
    colour: str
    cx: int
    cy: int
    r: int


def place(rng: random.Random, specs, box=(10, 10, 310, 230), rmin=14, rmax=22) -> list[Shape]:
    """Place ``(kind, colour)`` shapes at random without overlap (a gap of >= 6 px)."""
    shapes: list[Shape] = []
    for kind, colour in specs:
        for _ in range(2000):
            r = rng.randint(rmin, rmax)
            cx, cy = rng.randint(box[0] + r, box[2] - r), rng.randint(box[1] + r, box[3] - r)
            if all(math.hypot(cx - s.cx, cy - s.cy) > r + s.r + 6 for s in shapes):
                shapes.append(Shape(kind, colour, cx, cy, r))
                break
        else:  # pragma: no cover - the boxes used here always have room
            raise RuntimeError("no room to place shape")
    return shapes


def draw_shape(d: ImageDraw.ImageDraw, s: Shape) -> None:
    fill, (x, y, r) = COLOURS[s.colour], (s.cx, s.cy, s.r)
    if s.kind == "circle":
        d.ellipse((x - r, y - r, x + r, y + r), fill=fill)
    elif s.kind == "square":
        h = int(r * 0.85)
        d.rectangle((x - h, y - h, x + h, y + h), fill=fill)
    elif s.kind == "triangle":
        d.polygon([(x, y - r), (x - r * 0.87, y + r * 0.5), (x + r * 0.87, y + r * 0.5)], fill=fill)
    else:  # star
        pts = [
            (
                x + (r if i % 2 == 0 else r * 0.45) * math.sin(i * math.pi / 5),
                y - (r if i % 2 == 0 else r * 0.45) * math.cos(i * math.pi / 5),
            )
            for i in range(10)
        ]
        d.polygon(pts, fill=fill)


def canvas(shapes: list[Shape] = ()) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    img = Image.new("RGB", SIZE, BG)
    d = ImageDraw.Draw(img)
    for s in shapes:
        draw_shape(d, s)
    return img, d


def text_image(lines: list[str], size=34) -> Image.Image:
    img, d = canvas()
    y = SIZE[1] // 2 - len(lines) * (size + 8) // 2
    for line in lines:
        d.text((SIZE[0] // 2, y), line, font=font(size), fill=INK, anchor="mt")
        y += size + 8
    return img


def where(s: Shape) -> str:
    col = ("left", "centre", "right")[min(2, s.cx * 3 // SIZE[0])]
    row = ("top", "middle", "bottom")[min(2, s.cy * 3 // SIZE[1])]
    return "centre" if (row, col) == ("middle", "centre") else f"{row} {col}".replace("middle ", "")


def inventory(shapes: list[Shape]) -> list[str]:
    """``["2 red circles", "1 blue square"]`` in a stable order."""
    counts: dict[tuple[str, str], int] = {}
    for s in shapes:
        counts[(s.colour, s.kind)] = counts.get((s.colour, s.kind), 0) + 1
    return [f"{n} {c} {k}" + ("" if n == 1 else "s") for (c, k), n in sorted(counts.items())]


def join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


# -- image items: each returns (image, question, good, bad, tags, ground_truth) ----------------


def counting_scene(rng: random.Random):
    colour, kind = rng.choice(sorted(COLOURS)), rng.choice(COUNTABLE)
    n = rng.randint(1, 5)
    others = [(k, c) for k in COUNTABLE for c in sorted(COLOURS) if (k, c) != (kind, colour)]
    specs = [(kind, colour)] * n + [rng.choice(others) for _ in range(rng.randint(2, 4))]
    rng.shuffle(specs)
    return place(rng, specs), colour, kind, n


def counting(rng):
    shapes, colour, kind, n = counting_scene(rng)
    wrong = n + 1 if n == 1 or rng.random() < 0.5 else n - 1
    target = [s for s in shapes if (s.kind, s.colour) == (kind, colour)]
    rest = [s for s in shapes if s not in target]
    style = rng.randrange(3)

    def answer(m: int) -> str:
        if style == 0:
            return f"There {'is' if m == 1 else 'are'} **{m}** {colour} {kind}{'' if m == 1 else 's'} in the image."
        if style == 1:
            return (
                f"Looking at the image, I can see {m} {colour} {kind}{'s' if m != 1 else ''}. "
                f"The other shapes ({join(inventory(rest))}) do not count.\n\nAnswer: **{m}**"
            )
        spots = [where(s) for s in target]
        spots = spots[:m] if m <= len(spots) else spots + ["bottom right"] * (m - len(spots))
        bullets = "\n".join(f"- one at the {p}" for p in spots)
        return f"Let me count the {colour} {kind}s:\n\n{bullets}\n\nIn total there are **{m}**."

    q = f"How many {colour} {kind}s are there in the image?"
    return canvas(shapes)[0], q, answer(n), answer(wrong), ["counting"], str(n)


def colour_item(rng):
    kind = rng.choice(COUNTABLE)
    colours = rng.sample(sorted(COLOURS), 4)
    others = [k for k in ("circle", "square", "triangle", "star") if k != kind]
    shapes = place(rng, [(kind, colours[0])] + [(rng.choice(others), c) for c in colours[1:]])
    wrong = colours[rng.randrange(1, 4)]

    def answer(c: str) -> str:
        if rng.random() < 0.5:
            return f"The {kind} is {c}."
        return (
            f"The image shows several simple shapes on a light background. The {kind}, "
            f"located at the {where(shapes[0])}, is **{c}**."
        )

    good, bad = answer(colours[0]), answer(wrong)
    return canvas(shapes)[0], f"What colour is the {kind}?", good, bad, ["attribute"], colours[0]


def size_item(rng):
    a, b = rng.sample(["blue", "green", "orange", "purple"], 2)
    big, small = rng.randint(34, 44), rng.randint(14, 20)
    img, d = canvas()
    draw_shape(d, Shape("circle", a, 90, 120, big))
    draw_shape(d, Shape("circle", b, 230, 120, small))
    good = f"The **{a}** circle is bigger: it is roughly twice the diameter of the {b} one."
    bad = f"The **{b}** circle is bigger; the {a} circle on the left is the smaller of the two."
    return img, f"Which circle is bigger, the {a} one or the {b} one?", good, bad, ["attribute"], a


def position_item(rng):
    a, b = rng.sample(["triangle", "circle", "square"], 2)
    ca, cb = rng.sample(sorted(COLOURS), 2)
    left = rng.random() < 0.5
    xa, xb = (70, 240) if left else (240, 70)
    img, d = canvas()
    draw_shape(d, Shape(a, ca, xa, rng.randint(60, 180), 24))
    draw_shape(d, Shape(b, cb, xb, rng.randint(60, 180), 24))
    side, other = ("left", "right") if left else ("right", "left")
    good = f"The {ca} {a} is to the **{side}** of the {cb} {b}."
    bad = f"The {ca} {a} is to the **{other}** of the {cb} {b}, which sits on the {side} side of the image."
    q = f"Is the {a} to the left or to the right of the {b}?"
    return img, q, good, bad, ["others, wrong spatial relation"], side


SIGN_WORDS = {"STOP": "SHOP", "OPEN": "OVEN", "EXIT": "EDIT", "SALE": "SAFE", "CAFE": "CAKE", "PARK": "PORK"}


def sign_item(rng, word: str):
    colour = rng.choice(["red", "blue", "green", "purple"])
    img, d = canvas()
    d.rectangle((156, 150, 164, 235), fill=(110, 80, 50))
    d.rectangle((70, 50, 250, 150), fill=COLOURS[colour], outline=INK, width=3)
    d.text((160, 100), word, font=font(44), fill=(255, 255, 255), anchor="mm")
    good, bad = (
        f'The sign says "{w}" in white capital letters on a {colour} background.' for w in (word, SIGN_WORDS[word])
    )
    return img, "What word is written on the sign?", good, bad, ["recognition(text)"], word


OBJECT_CONFUSIONS = {"house": "tent", "tree": "lollipop", "sun": "flower", "car": "bus"}


def object_item(rng, name: str):
    img, d = canvas()
    if name == "house":
        d.rectangle((110, 120, 210, 210), fill=COLOURS["orange"])
        d.polygon([(100, 120), (160, 60), (220, 120)], fill=COLOURS["red"])
        d.rectangle((148, 165, 172, 210), fill=(110, 80, 50))
    elif name == "tree":
        d.rectangle((150, 140, 170, 215), fill=(110, 80, 50))
        d.ellipse((105, 45, 215, 155), fill=COLOURS["green"])
    elif name == "sun":
        for i in range(12):
            t = i * math.pi / 6
            d.line(
                (160 + 45 * math.cos(t), 120 + 45 * math.sin(t), 160 + 75 * math.cos(t), 120 + 75 * math.sin(t)),
                fill=COLOURS["orange"],
                width=5,
            )
        d.ellipse((120, 80, 200, 160), fill=COLOURS["yellow"])
    elif name == "car":
        d.rectangle((70, 120, 250, 170), fill=COLOURS["blue"])
        d.polygon([(110, 120), (130, 85), (200, 85), (220, 120)], fill=COLOURS["blue"])
        d.ellipse((90, 155, 130, 195), fill=INK)
        d.ellipse((190, 155, 230, 195), fill=INK)
    d.line((0, 215, 320, 215), fill=(120, 160, 90), width=3)
    good, bad = (
        f"It is a simple drawing of a **{n}** above a thin green ground line." for n in (name, OBJECT_CONFUSIONS[name])
    )
    return img, "What object is drawn in the picture?", good, bad, ["recognition(object)"], name


def existence_item(rng, present: bool):
    colours = sorted(COLOURS)
    specs = [(rng.choice(COUNTABLE), rng.choice(colours)) for _ in range(rng.randint(3, 5))]
    star = rng.choice(colours)
    shapes = place(rng, specs + [("star", star)] * present)
    seen = join(inventory([s for s in shapes if s.kind != "star"]))
    no = f"No, there is no star in the picture. It only contains {seen}."
    img, q = canvas(shapes)[0], "Is there a star in the picture?"
    if present:
        yes = f"Yes. There is a {star} star at the {where(shapes[-1])} of the picture, next to {seen}."
        return img, q, yes, no, ["others, missed an object that is present"], "yes"
    fake = f"Yes. There is a small {star} star near the top right corner, next to {seen}."
    return img, q, no, fake, ["hallucination"], "no"


def describe_item(rng, error: str):
    specs = [(rng.choice(COUNTABLE), rng.choice(sorted(COLOURS))) for _ in range(rng.randint(3, 5))]
    shapes = place(rng, specs)
    inv = inventory(shapes)
    bad_inv = list(inv)
    if error == "hallucination":
        bad_inv.append("1 black star")
    elif error == "counting":
        n, rest = bad_inv[0].split(" ", 1)
        bad_inv[0] = f"{int(n) + 1} {rest if rest.endswith('s') else rest + 's'}"
    else:  # attribute: same shapes, wrong colour for the first group
        n, colour, rest = bad_inv[0].split(" ", 2)
        new = next(c for c in sorted(COLOURS) if c != colour and f"{n} {c} {rest}" not in inv)
        bad_inv[0] = f"{n} {new} {rest}"

    def describe(items: list[str]) -> str:
        bullets = "\n".join(f"- {x}" for x in items)
        return (
            "The image is a flat illustration of geometric shapes on an off-white background. "
            f"It contains:\n\n{bullets}\n\nThe shapes do not overlap and there is no text."
        )

    return canvas(shapes)[0], "Describe the image in detail.", describe(inv), describe(bad_inv), [error], "; ".join(inv)


# -- reasoning (mathverse) ----------------------------------------------------------------------


def equation_item(rng):
    a, x, b = rng.randint(2, 9), rng.randint(2, 12), rng.randint(1, 20)
    c = a * x + b
    img = text_image(["Solve for x:", f"{a}x + {b} = {c}"])
    good = (
        f"Subtract {b} from both sides: $${a}x = {c} - {b} = {c - b}$$\n"
        f"Then divide by {a}: $x = \\frac{{{c - b}}}{{{a}}} = {x}$.\n\n**x = {x}**"
    )
    wrong_rhs = c + b  # sign slip: adds b instead of subtracting it
    exact = wrong_rhs % a == 0
    eq, sym, val = ("=", "=", f"{wrong_rhs // a}") if exact else ("\\approx", "≈", f"{wrong_rhs / a:.2f}")
    bad = (
        f"Move {b} to the other side: $${a}x = {c} + {b} = {wrong_rhs}$$\n"
        f"Then divide by {a}: $x = \\frac{{{wrong_rhs}}}{{{a}}} {eq} {val}$.\n\n**x {sym} {val}**"
    )
    return img, "Solve the equation shown in the image.", good, bad, ["reasoning"], str(x)


def expression_item(rng):
    a, b, c = rng.randint(11, 19), rng.randint(3, 9), rng.randint(2, 9)
    img = text_image([f"{a} + {b} · {c} = ?"], size=40)  # the bundled font has no "×"
    good = f"Multiplication comes before addition: {b} × {c} = {b * c}, then {a} + {b * c} = **{a + b * c}**."
    bad = f"Working left to right: {a} + {b} = {a + b}, then {a + b} × {c} = **{(a + b) * c}**."
    return img, "What is the value of the expression in the image?", good, bad, ["reasoning"], str(a + b * c)


def right_triangle(rng, misread: bool):
    k = rng.randint(1, 2)
    a, b, c = (x * k for x in rng.choice([(3, 4, 5), (5, 12, 13), (8, 15, 17), (6, 8, 10)]))
    img, d = canvas()
    d.polygon([(60, 200), (260, 200), (60, 50)], outline=INK, width=3)
    d.rectangle((60, 184, 76, 200), outline=INK, width=2)
    d.text((160, 206), str(b), font=font(22), fill=INK, anchor="mt")
    d.text((50, 125), str(a), font=font(22), fill=INK, anchor="rm")
    d.text((175, 115), "c", font=font(22), fill=INK, anchor="lb")
    q = "The legs of the right triangle are labelled. What is the length of the hypotenuse c?"
    good = (
        f"By the Pythagorean theorem, $c = \\sqrt{{a^2 + b^2}} = \\sqrt{{{a}^2 + {b}^2}} = "
        f"\\sqrt{{{a * a + b * b}}} = {c}$.\n\nThe hypotenuse is **{c}**."
    )
    if misread:
        ra = a + 1
        rc = math.sqrt(ra * ra + b * b)
        bad = (
            f"The legs are {ra} and {b}. By the Pythagorean theorem, "
            f"$c = \\sqrt{{{ra}^2 + {b}^2}} = \\sqrt{{{ra * ra + b * b}}} \\approx {rc:.2f}$.\n\n"
            f"The hypotenuse is about **{rc:.2f}**."
        )
        return img, q, good, bad, ["recognition(text)"], str(c)
    bad = f"The hypotenuse is the sum of the two legs: $c = {a} + {b} = {a + b}$.\n\nThe hypotenuse is **{a + b}**."
    return img, q, good, bad, ["reasoning"], str(c)


def rectangle_image(w: int, h: int) -> Image.Image:
    img, d = canvas()
    d.rectangle((60, 60, 260, 180), outline=INK, width=3)
    d.text((160, 186), f"{w} cm", font=font(22), fill=INK, anchor="mt")
    d.text((268, 120), f"{h} cm", font=font(22), fill=INK, anchor="lm")
    return img


def rectangle_item(rng, ask: str):
    w, h = rng.randint(5, 15), rng.randint(2, 9)
    area, perim = w * h, 2 * (w + h)
    if ask == "area":
        good = f"Area = width × height = {w} × {h} = **{area} cm²**."
        bad = (
            f"To find the area we add all sides:\n\n- {w} + {h} + {w} + {h} = {perim}\n\n"
            f"So the area is **{perim} cm²**."
        )
        return (
            rectangle_image(w, h),
            "What is the area of the rectangle?",
            good,
            bad,
            ["others, computed the perimeter instead of the area"],
            f"{area} cm²",
        )
    good = f"The perimeter is $2(w + h) = 2({w} + {h}) = {perim}$, i.e. **{perim} cm**."
    bad = f"The perimeter is $2(w + h) = 2({w} + {h}) = {perim + 2}$, i.e. **{perim + 2} cm**."
    return rectangle_image(w, h), "What is the perimeter of the rectangle?", good, bad, ["reasoning"], f"{perim} cm"


def circle_item(rng):
    r = rng.randint(3, 9)
    img, d = canvas()
    d.ellipse((90, 50, 230, 190), outline=INK, width=3)
    d.line((160, 120, 230, 120), fill=INK, width=2)
    d.text((195, 114), f"r = {r}", font=font(20), fill=INK, anchor="mb")
    good = f"The circumference is $C = 2\\pi r = 2 \\times 3.14 \\times {r} = {2 * 3.14 * r:.2f}$."
    bad = f"The circumference is $C = \\pi r^2 = 3.14 \\times {r}^2 = {3.14 * r * r:.2f}$."
    q = "Using π ≈ 3.14, what is the circumference of the circle?"
    return img, q, good, bad, ["reasoning"], f"{2 * 3.14 * r:.2f}"


def angle_item(rng):
    a, b = rng.randint(30, 80), rng.randint(30, 70)
    img, d = canvas()
    d.polygon([(40, 200), (280, 200), (150, 50)], outline=INK, width=3)
    d.text((70, 192), f"{a}°", font=font(20), fill=INK, anchor="lb")
    d.text((250, 192), f"{b}°", font=font(20), fill=INK, anchor="rb")
    d.text((150, 80), "x", font=font(20), fill=INK, anchor="mt")
    good = f"The angles of a triangle sum to 180°, so\n\n$$x = 180° - {a}° - {b}° = {180 - a - b}°$$"
    bad = f"The angles of a triangle sum to 360°, so\n\n$$x = 360° - {a}° - {b}° = {360 - a - b}°$$"
    return img, "Find the angle x in the triangle.", good, bad, ["reasoning"], f"{180 - a - b}°"


def points_item(rng, error: str):
    nc, ns = rng.randint(2, 4), rng.randint(1, 3)
    shapes = place(rng, [("circle", "red")] * nc + [("square", "blue")] * ns, box=(10, 50, 310, 230))
    img, d = canvas(shapes)
    d.text((160, 8), "red circle = 2, blue square = 3", font=font(18), fill=INK, anchor="mt")
    total = 2 * nc + 3 * ns

    def answer(seen: int, slip: int) -> str:  # seen: red circles counted; slip: arithmetic error
        return (
            f"- red circles: {seen} × 2 = {2 * seen}\n- blue squares: {ns} × 3 = {3 * ns}\n\n"
            f"Total: **{2 * seen + 3 * ns + slip}**"
        )

    good, bad = answer(nc, 0), answer(nc + 1, 0) if error == "counting" else answer(nc, 1)
    q = "Using the point values written at the top, what is the total score of all shapes?"
    return img, q, good, bad, [error], str(total)


# -- assembly -----------------------------------------------------------------------------------

GENERAL = (
    [counting] * 4
    + [colour_item] * 3
    + [size_item]
    + [position_item] * 2
    + [lambda r, w=w: sign_item(r, w) for w in ("SALE", "PARK", "EXIT")]
    + [lambda r, n=n: object_item(r, n) for n in ("house", "car", "sun")]
)
HALLUCINATION = (
    [lambda r: existence_item(r, False)] * 3
    + [lambda r: existence_item(r, True)]
    + [lambda r, e=e: describe_item(r, e) for e in ("hallucination", "counting", "attribute", "hallucination")]
    + [counting, counting, lambda r: sign_item(r, "OPEN"), lambda r: object_item(r, "tree")]
)
REASONING = [
    equation_item,
    equation_item,
    expression_item,
    lambda r: right_triangle(r, False),
    lambda r: right_triangle(r, True),
    lambda r: rectangle_item(r, "area"),
    lambda r: rectangle_item(r, "perimeter"),
    circle_item,
    angle_item,
    angle_item,
    lambda r: points_item(r, "counting"),
    lambda r: points_item(r, "reasoning"),
]


def _write_png(out: Path, rel: str, img: Image.Image, written: set[str]) -> str:
    img.save(out / rel, format="PNG", optimize=True)
    written.add(rel)
    return rel


def image_rows(out: Path, written: set[str]) -> list[dict]:
    """Build every VL-RewardBench row (and its PNG) from fixed seeds."""
    plan = (
        [("wildvision_demo_{:02d}", "wildvision", f) for f in GENERAL]
        + [
            (
                ("hallucination_pair-demo_{:02d}", "hallucination_pair")
                if i % 2 == 0
                else ("RLAIF-demo_{:02d}", "rlaif-v")
            )
            + (f,)
            for i, f in enumerate(HALLUCINATION)
        ]
        + [("mathverse_demo_{:02d}", "mathverse", f) for f in REASONING]
    )
    first = [0] * (len(plan) // 2) + [1] * (len(plan) - len(plan) // 2)
    random.Random(SEED).shuffle(first)  # which position holds the correct answer: balanced
    rows, numbers = [], {}
    for i, (id_fmt, source, make) in enumerate(plan):
        rng = random.Random(SEED + 1 + i)
        numbers[source] = numbers.get(source, 0) + 1
        item_id = id_fmt.format(numbers[source])
        img, q, good, bad, tags, gt = make(rng)
        responses, ranking = ([good, bad], [0, 1]) if first[i] == 0 else ([bad, good], [1, 0])
        models = rng.sample(MODELS, 2)
        rows.append(
            {
                "id": item_id,
                "query": "<image>\n" + q,
                "response": responses,
                "human_ranking": ranking,
                "image_path": _write_png(out, f"images/{item_id}.png", img, written),
                "query_source": source,
                "human_error_analysis": tags,
                "ground_truth": gt,
                "models": models,
            }
        )
    rows.append(best_of_n(out, written, len(GENERAL) + 1))
    return rows


def best_of_n(out: Path, written: set[str], number: int) -> dict:
    """One counting item with four answers of graded quality (Best-of-N)."""
    rng = random.Random(SEED + 999)
    n = 0
    while n < 3:  # the n - 1 answer must stay a plural count
        shapes, colour, kind, n = counting_scene(rng)
    graded = [  # best first
        f"I count **{n}** {colour} {kind}s. The remaining shapes have other colours or shapes.",
        f"There are **{n + 1}** {colour} {kind}s in the image.",
        f"There are **{n - 1}** {colour} {kind}s, plus a {colour} star in the middle.",
        f"The image shows **{n + 3}** {colour} {kind}s arranged in a perfect grid, with a caption below.",
    ]
    order = [2, 0, 3, 1]  # order[j] = quality rank of the answer placed at position j
    item_id = f"wildvision_demo_{number:02d}"
    return {
        "id": item_id,
        "query": f"<image>\nHow many {colour} {kind}s are there in the image?",
        "response": [graded[r] for r in order],
        "human_ranking": order,
        "image_path": _write_png(out, f"images/{item_id}.png", canvas(shapes)[0], written),
        "query_source": "wildvision",
        "human_error_analysis": ["counting", "hallucination"],
        "ground_truth": str(n),
        "models": list(MODELS),
    }


# -- videos -------------------------------------------------------------------------------------

VW, VH, FPS = 160, 120, 12


def _video_frame(kind: str, i: int) -> np.ndarray:
    """Frame ``i`` (BGR) of one of the three demo clips."""
    import cv2

    f = np.full((VH, VW, 3), BG[::-1], np.uint8)
    if kind == "ball":  # a red ball crossing from left to right
        cv2.circle(f, (15 + i * 130 // 35, 60), 12, COLOURS["red"][::-1], -1)
    elif kind == "counter":  # 1, 2, 3, 4, 5, half a second each
        cv2.putText(f, str(1 + i // 6), (55, 85), cv2.FONT_HERSHEY_SIMPLEX, 2.2, INK[::-1], 4)
    else:  # race: the blue square is faster than the green one
        xb, xg = min(10 + i * 5, 130), 10 + i * 3
        cv2.rectangle(f, (xb, 20), (xb + 20, 40), COLOURS["blue"][::-1], -1)
        cv2.rectangle(f, (xg, 75), (xg + 20, 95), COLOURS["green"][::-1], -1)
    return f


VIDEOS = [
    (
        "video_demo_01",
        "ball",
        36,
        "In which direction does the red ball move?",
        "The red ball moves from the **left** side of the frame to the **right** side at a steady speed.",
        "The red ball moves from the right side of the frame to the left side, slowing down at the end.",
        "short-form perception",
        3,
    ),
    (
        "video_demo_02",
        "counter",
        30,
        "What is the largest number the counter shows during the video?",
        "The counter goes 1, 2, 3, 4, 5, so the largest number shown is **5**.",
        "The counter goes 1, 2, 3, 4, so the largest number shown is **4**.",
        "long-form perception",
        2,
    ),
    (
        "video_demo_03",
        "race",
        30,
        "Two squares move to the right. Which one reaches the right edge first?",
        "The **blue** square (top) moves faster and reaches the right edge first; the green one lags behind.",
        "Both squares move at the same speed, but the **green** square (bottom) starts ahead and arrives first.",
        "reasoning",
        1,
    ),
]


def video_rows(out: Path, written: set[str]) -> list[dict]:
    import cv2

    rows = []
    for vid, kind, frames, prompt, chosen, rejected, dimension, strength in VIDEOS:
        rel = f"videos/{vid}.mp4"
        writer = cv2.VideoWriter(str(out / rel), cv2.VideoWriter_fourcc(*"mp4v"), FPS, (VW, VH))
        if not writer.isOpened():
            raise RuntimeError(f"{rel}: OpenCV cannot write mp4v video here")
        for i in range(frames):
            writer.write(_video_frame(kind, i))
        writer.release()
        cap = cv2.VideoCapture(str(out / rel))
        ok, _ = cap.read()
        count, _ = int(cap.get(cv2.CAP_PROP_FRAME_COUNT)), cap.release()
        if not ok or count <= 0:
            raise RuntimeError(f"{rel}: OpenCV wrote a video it cannot read back")
        written.add(rel)
        rows.append(
            {
                "id": vid,
                "video": rel,
                "prompt": prompt,
                "chosen": chosen,
                "rejected": rejected,
                "dimension": dimension,
                "preference_strength": strength,
            }
        )
    return rows


# -- step-wise items ----------------------------------------------------------------------------


def step_rows(out: Path, written: set[str]) -> list[dict]:
    rng = random.Random(SEED + 5000)
    w, h = 7, 4
    rect = _write_png(out, "images/steps_demo_01.png", rectangle_image(w, h), written)
    eq = _write_png(out, "images/steps_demo_02.png", text_image(["Solve for x:", "4x - 6 = 18"]), written)
    panels = [
        _write_png(
            out,
            f"images/steps_demo_03_{'ab'[j]}.png",
            canvas(place(rng, [("circle", "red")] * n + [("square", "blue")] * (j + 1)))[0],
            written,
        )
        for j, n in enumerate((3, 2))
    ]
    return [
        {
            "id": "steps_demo_01",
            "question": "What is the perimeter of the rectangle?",
            "images": [rect],
            "steps": [
                f"STEP1: The rectangle is {w} cm wide and {h} cm tall.",
                f"STEP2: The perimeter is 2 × ({w} + {h}).",
                f"STEP3: 2 × {w + h} = {2 * (w + h) + 2}.",
                f"STEP4: So the perimeter is {2 * (w + h) + 2} cm.",
            ],
            "task_gt": [0, 0, 1, 1],
            "category": "reasoning",
            "answer": f"{2 * (w + h)} cm",
        },
        {
            "id": "steps_demo_02",
            "question": "Solve the equation shown in the image.",
            "images": [eq],
            "steps": repr(
                [
                    "STEP1: Add 6 to both sides: 4x = 24.",
                    "STEP2: Divide both sides by 4: x = 6.",
                    "STEP3: Check: 4 × 6 - 6 = 18, so x = 6.",
                ]
            ),
            "task_gt": [0, 0, 0],
            "category": "reasoning",
            "answer": "6",
        },
        {
            "id": "steps_demo_03",
            "question": "How many red circles are there in the two images together?",
            "images": panels,
            "steps": repr(
                [
                    "STEP1: The first image has 3 red circles.",
                    "STEP2: The second image has 3 red circles.",
                    "STEP3: 3 + 3 = 6, so there are 6 red circles.",
                ]
            ),
            "task_gt": [0, 1, 1],
            "category": "reasoning",
            "answer": "5",
        },
    ]


README = """\
# PairScope demo dataset

Synthetic data whose right answers are known by construction. **Generated by
`python packaging/demo_build.py` — do not hand-edit; change the generator and rerun it.**

| file | format | contents |
|---|---|---|
| `images.jsonl` | VL-RewardBench (`vlrewardbench`) | {n_img} image items: general (`wildvision_demo_*`), hallucination (`hallucination_pair-demo_*`, `RLAIF-demo_*`), reasoning (`mathverse_demo_*`); one 4-response Best-of-N item |
| `videos.jsonl` | VideoRewardBench-style (`videorewardbench`) | {n_vid} short synthetic videos with a chosen / rejected answer |
| `steps.jsonl` | step-wise process labels (`steps`) | {n_steps} items; `task_gt` marks erroneous steps with 1 |
| `images/` | PNG, 320×240 | scenes drawn with Pillow |
| `videos/` | MP4 (mp4v), 160×120, 12 fps | drawn with OpenCV |

Every pair has one correct and one subtly wrong response (a miscount, a wrong colour, a
misread word, a hallucinated object, an arithmetic slip); `human_ranking` marks the correct
one and `human_error_analysis` names the error of the other. The correct response sits at a
random position, half the time first.
"""


def build(out_dir: Path | str = DEFAULT_OUT) -> dict[str, int]:
    """Write the demo dataset into ``out_dir``; returns the number of rows per file."""
    out = Path(out_dir)
    (out / "images").mkdir(parents=True, exist_ok=True)
    (out / "videos").mkdir(exist_ok=True)
    written: set[str] = set()
    files = {
        "images.jsonl": image_rows(out, written),
        "videos.jsonl": video_rows(out, written),
        "steps.jsonl": step_rows(out, written),
    }
    for name, rows in files.items():
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        (out / name).write_text(text, encoding="utf-8", newline="\n")
    counts = {name: len(rows) for name, rows in files.items()}
    (out / "README.md").write_text(
        README.format(n_img=counts["images.jsonl"], n_vid=counts["videos.jsonl"], n_steps=counts["steps.jsonl"]),
        encoding="utf-8",
        newline="\n",
    )
    for sub, ext in (("images", ".png"), ("videos", ".mp4")):  # drop stale media from older runs
        for f in (out / sub).glob(f"*{ext}"):
            if f"{sub}/{f.name}" not in written:
                f.unlink()
    return counts


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0]) if args else DEFAULT_OUT
    print(f"wrote {out}: " + ", ".join(f"{n} rows in {name}" for name, n in build(out).items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
