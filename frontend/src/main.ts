import { mount } from 'svelte';
import App from './App.svelte';
import { Api, detectTransport } from './lib/api';
import { AppState } from './lib/store.svelte';
import './app.css';

const s = new AppState(new Api(detectTransport()));
mount(App, { target: document.getElementById('app')!, props: { s } });
