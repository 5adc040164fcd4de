package demo

import (
	"image/color"

	"ndiro/internal/meal"
)

// dish is a demo meal: its notes, its typical numbers (kcal and grams,
// varied by ±10 % per meal) and the colours its photo is drawn in.
type dish struct {
	name                      string
	kcal, protein, carbs, fat int
	colors                    []color.NRGBA
	drink                     bool
}

// menus are the dishes of each kind of meal.
var menus = map[meal.Kind][]dish{
	meal.Breakfast: {
		{"Porridge with blueberries and walnuts", 380, 12, 58, 11, []color.NRGBA{oats, berry, almond}, false},
		{"Greek yoghurt, honey and granola", 340, 18, 42, 10, []color.NRGBA{white, oats, egg}, false},
		{"Two eggs on rye toast", 420, 22, 34, 20, []color.NRGBA{egg, white, bread, crust}, false},
		{"Banana pancakes with a little maple syrup", 460, 14, 70, 13, []color.NRGBA{pasta, banana, crust}, false},
		{"Avocado toast with tomato", 390, 11, 38, 21, []color.NRGBA{avocado, tomato, bread}, false},
	},
	meal.Lunch: {
		{"Lentil soup with bread", 520, 24, 70, 12, []color.NRGBA{lentil, carrot, bread}, false},
		{"Chicken salad with avocado", 540, 38, 18, 34, []color.NRGBA{leaf, avocado, meat, tomato}, false},
		{"Tomato pasta with basil", 610, 19, 96, 14, []color.NRGBA{pasta, tomato, herb}, false},
		{"Rice bowl with tofu and greens", 580, 26, 78, 16, []color.NRGBA{rice, leaf, potato, herb}, false},
		{"Falafel wrap with hummus", 640, 21, 72, 28, []color.NRGBA{crust, hummus, leaf, tomato}, false},
	},
	meal.Dinner: {
		{"Salmon, potatoes and green beans", 650, 40, 48, 30, []color.NRGBA{salmon, potato, leaf}, false},
		{"Vegetable curry with rice", 690, 18, 104, 20, []color.NRGBA{curry, rice, carrot, herb}, false},
		{"Mushroom risotto", 620, 16, 88, 21, []color.NRGBA{rice, mushroom, herb}, false},
		{"Chili con carne", 700, 42, 60, 28, []color.NRGBA{chili, meat, rice}, false},
		{"Roast chicken with carrots", 660, 48, 30, 36, []color.NRGBA{meat, carrot, potato, herb}, false},
	},
	meal.Snack: {
		{"Apple and almonds", 210, 6, 24, 11, []color.NRGBA{apple, almond}, false},
		{"Carrot sticks and hummus", 180, 6, 20, 9, []color.NRGBA{carrot, hummus}, false},
		{"Two squares of dark chocolate", 120, 2, 9, 9, []color.NRGBA{cocoa}, false},
		{"Banana", 105, 1, 27, 0, []color.NRGBA{banana}, false},
	},
	meal.Drink: {
		{"Flat white", 110, 6, 9, 6, []color.NRGBA{coffee, foam}, true},
		{"Green tea", 2, 0, 0, 0, []color.NRGBA{tea}, true},
		{"Fresh orange juice", 110, 2, 26, 0, []color.NRGBA{orange, egg}, true},
	},
}

// allDishes lists every dish of every menu, in a fixed order.
func allDishes() []dish {
	var all []dish
	for _, k := range meal.Kinds {
		all = append(all, menus[k]...)
	}
	return all
}
